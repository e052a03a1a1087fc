// The communicator `mpi` (libhb_comm_mpi.so): averaging on host buffers with Open MPI: a bucket's
// buffers are copied into one contiguous staging buffer, summed in place by MPI_Iallreduce, and
// copied back divided by the rank count.
#include "parallel/communicator.hpp"
#include "parallel/mpi/mpi_world.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>

namespace harness::parallel {

namespace {

class MpiCommunicator : public Communicator {
public:
    MpiCommunicator(const MpiWorld& world, const CommunicatorSetup& setup)
        : world_(world), buffers_(setup.buffers), buckets_(setup.buckets) {
        for (const hb_gradient_buffer& b : buffers_)
            if (b.memory != HB_MEMORY_HOST)
                throw std::runtime_error(
                    "communicator mpi averages host memory; the plugin's gradients are in device "
                    "memory (use communicator: nccl)");
        for (const Bucket& b : buckets_) staging_.emplace_back(static_cast<size_t>(b.elements));
    }

    void start(int bucket) override {
        const Bucket& b = buckets_.at(static_cast<size_t>(bucket));
        float* out = staging_[static_cast<size_t>(bucket)].data();
        for (int i = b.first; i < b.first + b.count; ++i) {
            const hb_gradient_buffer& g = buffers_[static_cast<size_t>(i)];
            std::memcpy(out, g.data, static_cast<size_t>(g.elements) * sizeof(float));
            out += g.elements;
        }
        MPI_Request request = MPI_REQUEST_NULL;
        check_mpi(MPI_Iallreduce(MPI_IN_PLACE, staging_[static_cast<size_t>(bucket)].data(),
                                 static_cast<int>(b.elements), MPI_FLOAT, MPI_SUM, world_.comm(),
                                 &request),
                  "MPI_Iallreduce");
        started_.push_back(bucket);
        requests_.push_back(request);
        // Open MPI progresses a non-blocking collective only inside MPI calls.
        int done = 0;
        check_mpi(MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &done,
                              MPI_STATUSES_IGNORE),
                  "MPI_Testall");
    }

    void finish() override {
        check_mpi(
            MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE),
            "MPI_Waitall");
        const float scale = 1.0f / static_cast<float>(world_.size());
        for (int bucket : started_) {
            const Bucket& b = buckets_[static_cast<size_t>(bucket)];
            const float* in = staging_[static_cast<size_t>(bucket)].data();
            for (int i = b.first; i < b.first + b.count; ++i) {
                const hb_gradient_buffer& g = buffers_[static_cast<size_t>(i)];
                for (int64_t k = 0; k < g.elements; ++k) g.data[k] = in[k] * scale;
                in += g.elements;
            }
        }
        started_.clear();
        requests_.clear();
    }

    double time_all_reduce(int64_t bytes, int warmup, int iterations) override {
        std::vector<float> data(static_cast<size_t>(bytes) / sizeof(float), 1.0f);
        auto once = [&] {
            check_mpi(MPI_Allreduce(MPI_IN_PLACE, data.data(), static_cast<int>(data.size()),
                                    MPI_FLOAT, MPI_SUM, world_.comm()),
                      "MPI_Allreduce");
        };
        for (int i = 0; i < warmup; ++i) once();
        world_.barrier();
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < iterations; ++i) once();
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count() /
            std::max(1, iterations);
        return world_.max_each({ms}).front();
    }

private:
    const MpiWorld& world_;
    std::vector<hb_gradient_buffer> buffers_;
    std::vector<Bucket> buckets_;
    std::vector<std::vector<float>> staging_;
    std::vector<int> started_;
    std::vector<MPI_Request> requests_;
};

class MpiModule : public CommunicatorModule {
public:
    std::string name() const override { return "mpi"; }
    std::string version() const override { return MpiWorld::library_version(); }
    std::string algorithm() const override {
        return "MPI_Iallreduce of a contiguous copy of each bucket; the algorithm is the MPI "
               "library's choice";
    }
    World* world() override {
        if (!world_) world_ = std::make_unique<MpiWorld>();
        return world_.get();
    }
    std::unique_ptr<Communicator> make(const CommunicatorSetup& setup) override {
        return std::make_unique<MpiCommunicator>(static_cast<MpiWorld&>(*world()), setup);
    }

private:
    std::unique_ptr<MpiWorld> world_;
};

}  // namespace

}  // namespace harness::parallel

extern "C" __attribute__((visibility("default"))) harness::parallel::CommunicatorModule*
hb_communicator_module() {
    static harness::parallel::MpiModule module;
    return &module;
}
