// The communicator `nccl` (libhb_comm_nccl.so): averaging on device buffers with NCCL. A bucket's
// buffers are averaged in place by one ncclAllReduce (ncclAvg) each, in one NCCL group, on a
// communication stream of the module's own that waits for the session's stream; finish makes the
// session's stream wait for the communication stream. The host never waits for the device.
#include "parallel/communicator.hpp"
#include "parallel/nccl/nccl_text.hpp"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace harness::parallel {

namespace {

void check_cuda(cudaError_t code, const char* call) {
    if (code != cudaSuccess)
        throw std::runtime_error(std::string(call) + " failed: " + cudaGetErrorString(code));
}

void check_nccl(ncclResult_t code, const char* call) {
    if (code == ncclSuccess) return;
    std::string message = std::string(call) + " failed: " + ncclGetErrorString(code);
    const char* detail = ncclGetLastError(nullptr);
    if (detail && *detail) message += std::string(" (") + detail + ")";
    throw std::runtime_error(message);
}

// Owns one handle, released by `Release` (whose result is ignored: nothing can be done about it
// in a destructor).
template <typename Handle, auto Release>
class Owned {
public:
    Owned() = default;
    explicit Owned(Handle handle) : handle_(handle) {}
    ~Owned() {
        if (handle_) static_cast<void>(Release(handle_));
    }
    Owned(Owned&& other) noexcept : handle_(std::exchange(other.handle_, Handle{})) {}
    Owned& operator=(Owned&& other) noexcept {
        std::swap(handle_, other.handle_);
        return *this;
    }
    Owned(const Owned&) = delete;
    Owned& operator=(const Owned&) = delete;

    Handle get() const { return handle_; }

private:
    Handle handle_{};
};

using Stream = Owned<cudaStream_t, cudaStreamDestroy>;
using Event = Owned<cudaEvent_t, cudaEventDestroy>;
using Comm = Owned<ncclComm_t, ncclCommDestroy>;
using DeviceMemory = Owned<void*, cudaFree>;

Stream make_stream() {
    cudaStream_t stream = nullptr;
    check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
               "cudaStreamCreateWithFlags");
    return Stream(stream);
}

Event make_event(unsigned int flags) {
    cudaEvent_t event = nullptr;
    check_cuda(cudaEventCreateWithFlags(&event, flags), "cudaEventCreateWithFlags");
    return Event(event);
}

Comm make_comm(const World& world) {
    ncclUniqueId id{};
    if (world.rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    world.broadcast(&id, sizeof id, 0);
    ncclComm_t comm = nullptr;
    check_nccl(ncclCommInitRank(&comm, world.size(), id, world.rank()), "ncclCommInitRank");
    return Comm(comm);
}

// Work enqueued on `waiting` from now on runs after the work enqueued on `first` so far.
void order_after(cudaStream_t waiting, cudaStream_t first, cudaEvent_t event) {
    check_cuda(cudaEventRecord(event, first), "cudaEventRecord");
    check_cuda(cudaStreamWaitEvent(waiting, event, 0), "cudaStreamWaitEvent");
}

class NcclCommunicator : public Communicator {
public:
    NcclCommunicator(const CommunicatorSetup& setup, int device)
        : world_(*setup.world),
          device_(device),
          buffers_(setup.buffers),
          buckets_(setup.buckets),
          session_stream_(static_cast<cudaStream_t>(setup.stream)),
          comm_stream_(make_stream()),
          gradients_ready_(make_event(cudaEventDisableTiming)),
          averages_ready_(make_event(cudaEventDisableTiming)),
          comm_(make_comm(world_)) {}

    void start(int bucket) override {
        const Bucket& b = buckets_.at(static_cast<size_t>(bucket));
        order_after(comm_stream_.get(), session_stream_, gradients_ready_.get());
        check_nccl(ncclGroupStart(), "ncclGroupStart");
        ncclResult_t result = ncclSuccess;
        for (int i = b.first; i < b.first + b.count && result == ncclSuccess; ++i) {
            const hb_gradient_buffer& g = buffers_.at(static_cast<size_t>(i));
            result = ncclAllReduce(g.data, g.data, static_cast<size_t>(g.elements), ncclFloat,
                                   ncclAvg, comm_.get(), comm_stream_.get());
        }
        // The group is closed whatever happened inside it.
        const ncclResult_t end = ncclGroupEnd();
        check_nccl(result, "ncclAllReduce");
        check_nccl(end, "ncclGroupEnd");
    }

    void finish() override {
        order_after(session_stream_, comm_stream_.get(), averages_ready_.get());
    }

    double time_all_reduce(int64_t bytes, int warmup, int iterations) override {
        check_cuda(cudaSetDevice(device_), "cudaSetDevice");
        const size_t elements = static_cast<size_t>(bytes) / sizeof(float);
        const size_t allocated = std::max<size_t>(elements, 1) * sizeof(float);
        void* raw = nullptr;
        check_cuda(cudaMalloc(&raw, allocated), "cudaMalloc");
        const DeviceMemory data(raw);
        const cudaStream_t stream = comm_stream_.get();
        check_cuda(cudaMemsetAsync(raw, 0, allocated, stream), "cudaMemsetAsync");
        auto once = [&] {
            check_nccl(ncclAllReduce(raw, raw, elements, ncclFloat, ncclSum, comm_.get(), stream),
                       "ncclAllReduce");
        };
        for (int i = 0; i < warmup; ++i) once();
        check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        world_.barrier();

        const Event begin = make_event(cudaEventDefault), end = make_event(cudaEventDefault);
        check_cuda(cudaEventRecord(begin.get(), stream), "cudaEventRecord");
        for (int i = 0; i < iterations; ++i) once();
        check_cuda(cudaEventRecord(end.get(), stream), "cudaEventRecord");
        check_cuda(cudaEventSynchronize(end.get()), "cudaEventSynchronize");
        float total_ms = 0.0f;
        check_cuda(cudaEventElapsedTime(&total_ms, begin.get(), end.get()), "cudaEventElapsedTime");
        const double ms = static_cast<double>(total_ms) / std::max(1, iterations);
        return world_.max_each({ms}).front();
    }

private:
    const World& world_;
    int device_;
    std::vector<hb_gradient_buffer> buffers_;
    std::vector<Bucket> buckets_;
    cudaStream_t session_stream_;
    // Declared before the communicator, so destroyed after it.
    Stream comm_stream_;
    Event gradients_ready_, averages_ready_;
    Comm comm_;
};

class NcclModule : public CommunicatorModule {
public:
    std::string name() const override { return "nccl"; }
    std::string version() const override {
        int code = 0;
        check_nccl(ncclGetVersion(&code), "ncclGetVersion");
        return nccl_version_text(code);
    }
    std::string algorithm() const override { return nccl_algorithm_text(std::getenv("NCCL_ALGO")); }
    // The ranks come from the harness (MPI's, or one rank's), not from NCCL.
    World* world() override { return nullptr; }

    std::unique_ptr<Communicator> make(const CommunicatorSetup& setup) override {
        for (const hb_gradient_buffer& b : setup.buffers)
            if (b.memory != HB_MEMORY_DEVICE)
                throw std::runtime_error(
                    "communicator nccl averages device memory; the plugin's gradients are in host "
                    "memory (use communicator: mpi)");
        if (!setup.stream)
            throw std::runtime_error(
                "communicator nccl needs the session's CUDA stream; the plugin gave none");
        if (!setup.world) throw std::runtime_error("communicator nccl needs the harness's ranks");
        const int device = nccl_device_ordinal(setup.device);
        check_cuda(cudaSetDevice(device), "cudaSetDevice");
        return std::make_unique<NcclCommunicator>(setup, device);
    }
};

}  // namespace

}  // namespace harness::parallel

extern "C" __attribute__((visibility("default"))) harness::parallel::CommunicatorModule*
hb_communicator_module() {
    static harness::parallel::NcclModule module;
    return &module;
}
