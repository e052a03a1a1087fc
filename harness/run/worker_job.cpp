#include "run/worker_job.hpp"

#include <unistd.h>

namespace harness::run {

config::BackendEntry entry_for(const config::RunConfig& config, const WorkerJob& job) {
    config::BackendEntry entry;
    if (const int* index = std::get_if<int>(&job.backend)) {
        entry = config.backends.at(static_cast<size_t>(*index));
    } else {
        const PluginDefaults& p = std::get<PluginDefaults>(job.backend);
        entry.name = p.plugin;
        entry.plugin = p.plugin;
        entry.device = p.device;
        entry.placement = config.placement;
    }
    for (const auto& [key, value] : job.options) entry.options[key] = value;
    return entry;
}

output::BackendRun describe_entry(const config::RunConfig& config,
                                  const config::BackendEntry& entry, const StepCounts& overrides,
                                  const model::Graph& graph) {
    output::BackendRun run;
    run.backend = entry.name;
    run.plugin = entry.plugin;
    run.device = entry.device;
    run.placement = config::to_string(entry.placement);
    run.options = entry.options;
    run.environment = entry.environment;
    // math_mode and threads stay unknown until the session's manifest says them (training.cpp).
    run.warmup = overrides.warmup >= 0 ? overrides.warmup
                 : entry.warmup >= 0   ? entry.warmup
                                       : config.warmup;
    run.iterations = overrides.iterations >= 0 ? overrides.iterations
                     : entry.iterations >= 0   ? entry.iterations
                                               : config.iterations;
    run.batch = config.model.batch;
    run.flops_per_step = graph.training_flops_per_step();
    run.manifest_json = "{}";
    return run;
}

std::string rank_result_path(const std::string& result_path, int rank) {
    return rank == 0 ? result_path : result_path + ".rank-" + std::to_string(rank);
}

namespace {

// mpirun's own options for `job` (Open MPI 4): more ranks than cores are allowed (the rows say so),
// each rank's threads are left unbound, and root may launch, as in a container.
std::vector<std::string> mpirun_arguments(const std::string& mpirun, const WorkerJob& job,
                                          const config::RunConfig& config) {
    std::vector<std::string> argv = {
        mpirun, "-np", std::to_string(job.ranks), "--oversubscribe", "--bind-to", "none"};
    if (geteuid() == 0) argv.push_back("--allow-run-as-root");
    if (!config.parallel.hostfile.empty())
        argv.insert(argv.end(), {"--hostfile", config.parallel.hostfile});
    return argv;
}

}  // namespace

std::vector<std::string> worker_arguments(const std::string& harness, const WorkerJob& job,
                                          const config::RunConfig& config,
                                          const std::string& mpirun) {
    std::vector<std::string> argv;
    if (job.ranks > 1) argv = mpirun_arguments(mpirun, job, config);
    const std::vector<std::string> worker = {
        harness,         "__worker",
        job.config_path, job.result_path,
        "--warmup",      std::to_string(job.overrides.warmup),
        "--iterations",  std::to_string(job.overrides.iterations)};
    argv.insert(argv.end(), worker.begin(), worker.end());
    if (const int* index = std::get_if<int>(&job.backend))
        argv.insert(argv.end(), {"--entry", std::to_string(*index)});
    else
        argv.insert(argv.end(), {"--plugin", std::get<PluginDefaults>(job.backend).plugin,
                                 "--device", std::get<PluginDefaults>(job.backend).device});
    // Every option in force, as the harness read and checked it: the worker reads none again.
    for (const auto& [key, value] : entry_for(config, job).options)
        argv.insert(argv.end(), {"--option", key + "=" + value});
    if (job.profiling.steps > 0)
        argv.insert(argv.end(), {"--profile-steps", std::to_string(job.profiling.steps)});
    if (!job.profiling.trace_dir.empty())
        argv.insert(argv.end(), {"--trace", job.profiling.trace_dir});
    if (job.capture) argv.insert(argv.end(), {"--capture", job.capture->dir});
    if (job.unit >= 0) argv.insert(argv.end(), {"--unit", std::to_string(job.unit)});
    if (job.ranks > 0) argv.insert(argv.end(), {"--ranks", std::to_string(job.ranks)});
    if (job.same_batch) argv.push_back("--same-batch");
    if (job.progress_fd >= 0)
        argv.insert(argv.end(), {"--progress-fd", std::to_string(job.progress_fd)});
    if (const auto& t = job.layer_timing)
        argv.insert(argv.end(), {"--layer-units", t->units, "--layer-repetitions",
                                 std::to_string(t->repetitions), "--layer-iterations",
                                 std::to_string(t->iterations), "--gbench-out", t->gbench_out,
                                 "--units-out", t->units_out});
    return argv;
}

}  // namespace harness::run
