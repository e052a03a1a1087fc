#include "run/data_parallel.hpp"

#include "parallel/communicator.hpp"
#include "parallel/gradient_averager.hpp"
#include "parallel/world.hpp"
#include "run/training.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace harness::run {

namespace {

// Open MPI's mpirun tells each process its place in these.
constexpr const char* kWorldSizeVariable = "OMPI_COMM_WORLD_SIZE";
constexpr const char* kWorldRankVariable = "OMPI_COMM_WORLD_RANK";

std::string communicator_name(config::CommunicatorKind kind, const std::string& device) {
    if (kind == config::CommunicatorKind::automatic)
        return device.rfind("cuda", 0) == 0 ? "nccl" : "mpi";
    return config::to_string(kind);
}

// The all-reduce of the whole gradient timed alone, as nccl-tests times it; one rank has nothing
// to exchange.
void time_all_reduce(parallel::Communicator& communicator, int ranks, output::ParallelRun& p) {
    constexpr int kWarmup = 5, kIterations = 20;
    if (ranks == 1) return;
    p.allreduce_ms = communicator.time_all_reduce(p.gradient_bytes, kWarmup, kIterations);
    if (p.allreduce_ms <= 0) return;
    p.algbw_gbps = static_cast<double>(p.gradient_bytes) / (p.allreduce_ms * 1e-3) / 1e9;
    p.busbw_gbps = p.algbw_gbps * 2.0 * (ranks - 1) / ranks;
}

}  // namespace

int launched_rank() {
    const char* rank = std::getenv(kWorldRankVariable);
    return rank ? std::atoi(rank) : 0;
}

parallel::World& join_ranks(const WorkerJob& job) {
    static parallel::SingleWorld single;
    parallel::World* world = &single;
    if (std::getenv(kWorldSizeVariable)) world = parallel::load_communicator_module("mpi").world();
    if (world->size() != job.ranks)
        throw std::runtime_error(
            fmt::format("launched as {} ranks, but the run is of {}", world->size(), job.ranks));
    if (world->local_size() > 1 && !std::getenv("OMP_NUM_THREADS")) {
        const int threads = std::max(1, hb::logical_processors() / world->local_size());
        setenv("OMP_NUM_THREADS", std::to_string(threads).c_str(), 1);
    }
    return *world;
}

void run_data_parallel(const WorkerJob& job, const config::RunConfig& config,
                       const config::BackendEntry& entry, model::Graph graph,
                       const plugin_host::PluginLibrary& library, parallel::World& world,
                       const std::function<bool()>& stop, output::BackendRun& run) {
    if (!library.can_split_step()) {
        run.status = output::Status::skipped;
        run.message = "plugin " + entry.plugin +
                      " has no data-parallel steps (no HB_CAP_DATA_PARALLEL; docs/parallel.md)";
        return;
    }
    const config::ParallelConfig& settings = config.parallel;
    const bool same_batch = settings.same_batch || job.same_batch;
    const int ranks = world.size(), rank = world.rank();
    output::ParallelRun& info = run.parallel.emplace();
    info.ranks = ranks;
    info.overlap = settings.overlap;
    info.oversubscribed = world.oversubscribed();
    run.batch *= ranks;
    run.flops_per_step *= ranks;

    Training training(std::move(graph), config, entry, library, run, job.capture.has_value());
    void* stream = nullptr;
    parallel::CommunicatorSetup setup;
    setup.world = &world;
    setup.buffers = training.session->gradient_buffers(*training.abi_graph.get(), &stream);
    setup.stream = stream;
    setup.device = entry.device;
    std::vector<int64_t> elements;
    for (const hb_gradient_buffer& b : setup.buffers) {
        elements.push_back(b.elements);
        info.gradient_bytes += b.elements * static_cast<int64_t>(sizeof(float));
    }
    setup.buckets =
        parallel::plan_buckets(elements, static_cast<int64_t>(settings.bucket_mb * (1 << 20)));
    info.buckets = static_cast<int>(setup.buckets.size());
    info.communicator = communicator_name(settings.communicator, entry.device);
    parallel::CommunicatorModule& module = parallel::load_communicator_module(info.communicator);
    info.algorithm = module.algorithm();
    run.libraries[info.communicator] = module.version();
    parallel::GradientAverager averager(module.make(setup), setup.buckets, settings.overlap);

    const auto ready = averager.ready_callback();
    const int batches = training.batch_count;
    auto step = [&](int k, bool timed) {
        const int batch = same_batch ? k % batches : (k * ranks + rank) % batches;
        averager.start_step();
        const StepClock clock;
        hb_step_result result = training.session->forward_backward(batch, ready);
        const double communication_ms = averager.finish_step();
        result.optimizer_ms = training.session->apply_update().optimizer_ms;
        Training::record(result, clock, timed, run);
        if (timed) info.communication_ms.push_back(communication_ms);
    };

    if (job.capture) {
        // Every rank's tensors: rank 0's where a one-rank capture puts them, the others' beside.
        const std::string dir =
            rank == 0 ? job.capture->dir : job.capture->dir + "/rank-" + std::to_string(rank);
        for (int k = 0; k < run.iterations; ++k) {
            step(k, true);
            training.write_tensors(dir, "gradient",
                                   k == 0 ? "gradient" : "gradient-" + std::to_string(k + 1));
        }
        training.write_tensors(dir, "state");
        training.finish(run);
        return;
    }
    const bool stopped = time_steps(training, run, step, [&](bool) { return world.any(stop()); });
    // The step of a data-parallel run is as slow as its slowest rank.
    run.warmup_ms = world.max_each(run.warmup_ms);
    run.samples_ms = world.max_each(run.samples_ms);
    info.communication_ms = world.max_each(info.communication_ms);
    run.stats = output::compute_stats(run.samples_ms, run.batch, run.flops_per_step);
    if (!stopped) time_all_reduce(averager.communicator(), ranks, info);
}

}  // namespace harness::run
