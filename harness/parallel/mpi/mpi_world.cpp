#include "parallel/mpi/mpi_world.hpp"

#include <stdexcept>

namespace harness::parallel {

void check_mpi(int code, const char* call) {
    if (code == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    throw std::runtime_error(std::string(call) + " failed: " + std::string(text, length));
}

MpiWorld::MpiWorld() {
    int provided = 0;
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    // Errors come back as codes, so that a failed call becomes an exception, not an abort.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    check_mpi(
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local_),
        "MPI_Comm_split_type");
    MPI_Comm_size(local_, &local_size_);
}

MpiWorld::~MpiWorld() {
    if (local_ != MPI_COMM_NULL) MPI_Comm_free(&local_);
    MPI_Finalize();
}

std::string MpiWorld::library_version() {
    char text[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    MPI_Get_library_version(text, &length);
    // "Open MPI v4.1.4, package: ...": the name and version, before the first comma.
    std::string version(text, static_cast<size_t>(length));
    return version.substr(0, version.find_first_of(std::string(",\r\n\0", 4)));
}

std::vector<double> MpiWorld::max_each(const std::vector<double>& values) const {
    std::vector<double> out(values.size());
    check_mpi(MPI_Allreduce(values.data(), out.data(), static_cast<int>(values.size()), MPI_DOUBLE,
                            MPI_MAX, MPI_COMM_WORLD),
              "MPI_Allreduce");
    return out;
}

bool MpiWorld::any(bool value) const {
    int in = value ? 1 : 0, out = 0;
    check_mpi(MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD), "MPI_Allreduce");
    return out != 0;
}

void MpiWorld::broadcast(void* bytes, int64_t count, int root) const {
    check_mpi(MPI_Bcast(bytes, static_cast<int>(count), MPI_BYTE, root, MPI_COMM_WORLD),
              "MPI_Bcast");
}

void MpiWorld::barrier() const {
    check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

}  // namespace harness::parallel
