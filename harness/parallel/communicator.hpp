// What averages the gradients across ranks (docs/parallel.md): Open MPI on host buffers, NCCL on
// device buffers. Each lives in a module of its own (libhb_comm_mpi.so, libhb_comm_nccl.so), loaded
// only by a data-parallel worker, so that the harness itself needs neither library to start.
#pragma once

#include "hb/plugin.h"
#include "parallel/buckets.hpp"
#include "parallel/world.hpp"

#include <memory>
#include <string>
#include <vector>

namespace harness::parallel {

// Made for one session's gradient buffers and buckets.
class Communicator {
public:
    virtual ~Communicator() = default;
    // Starts averaging bucket `bucket`, whose buffers are final (device memory: after the work
    // enqueued on the session's stream so far).
    virtual void start(int bucket) = 0;
    // Completes every bucket started since the last finish: the buffers hold the averages (device
    // memory: for work the session enqueues on its stream from now on).
    virtual void finish() = 0;
    // nccl-tests' measurement: milliseconds per all-reduce (sum) of `bytes` bytes of float32, the
    // mean of `iterations` after `warmup` untimed ones, the slowest rank's; every rank calls it.
    virtual double time_all_reduce(int64_t bytes, int warmup, int iterations) = 0;
};

struct CommunicatorSetup {
    const World* world = nullptr;
    std::vector<hb_gradient_buffer> buffers;
    std::vector<Bucket> buckets;
    void* stream = nullptr;  // device memory: the session's cudaStream_t
    std::string device;      // the session's device, "cpu" or "cuda:N"
};

class CommunicatorModule {
public:
    virtual ~CommunicatorModule() = default;
    virtual std::string name() const = 0;     // "mpi", "nccl"
    virtual std::string version() const = 0;  // the library's own name and version
    // How the all-reduce is done, for the rows: the call and the algorithm where it is known.
    virtual std::string algorithm() const = 0;
    // The ranks launched by mpirun (MPI initialised on the first call, finalised with the
    // module), or nullptr for a module that has none.
    virtual World* world() = 0;
    virtual std::unique_ptr<Communicator> make(const CommunicatorSetup& setup) = 0;
};

// The module's one symbol: extern "C" CommunicatorModule* hb_communicator_module(void).
#define HB_COMMUNICATOR_ENTRY "hb_communicator_module"

// Loads libhb_comm_<name>.so from the communicators/ folder beside the harness executable or, for
// an executable installed in a bin/ folder, from ../lib/harness/communicators. Throws
// std::runtime_error saying why when it is not there (configure's reason when it was not built)
// or does not load.
CommunicatorModule& load_communicator_module(const std::string& name);

}  // namespace harness::parallel
