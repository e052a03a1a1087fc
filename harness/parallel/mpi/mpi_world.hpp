// The ranks mpirun launched: MPI initialised for the life of the object.
#pragma once

#include "parallel/world.hpp"

#include <mpi.h>

namespace harness::parallel {

class MpiWorld : public World {
public:
    MpiWorld();            // MPI_Init_thread, funneled: only the worker's main thread calls MPI
    ~MpiWorld() override;  // MPI_Finalize
    MpiWorld(const MpiWorld&) = delete;
    MpiWorld& operator=(const MpiWorld&) = delete;

    int rank() const override { return rank_; }
    int size() const override { return size_; }
    int local_size() const override { return local_size_; }
    std::vector<double> max_each(const std::vector<double>& values) const override;
    bool any(bool value) const override;
    void broadcast(void* bytes, int64_t count, int root) const override;
    void barrier() const override;

    MPI_Comm comm() const { return MPI_COMM_WORLD; }
    // "Open MPI v4.1.4": MPI_Get_library_version's name and version.
    static std::string library_version();

private:
    int rank_ = 0, size_ = 1, local_size_ = 1;
    MPI_Comm local_ = MPI_COMM_NULL;
};

// Throws std::runtime_error naming the call when `code` is not MPI_SUCCESS.
void check_mpi(int code, const char* call);

}  // namespace harness::parallel
