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
    for (const auto& [key, value] : job.options)
        entry.options[key] = entry.options_in_force[key] = value;
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
    run.options_in_force = entry.options_in_force;
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

std::vector<std::string> worker_arguments(const std::string& harness, const std::string& job_file,
                                          const WorkerJob& job, const config::RunConfig& config,
                                          const std::string& mpirun) {
    std::vector<std::string> argv;
    if (job.ranks > 1) argv = mpirun_arguments(mpirun, job, config);
    argv.insert(argv.end(), {harness, "__worker", job_file});
    return argv;
}

}  // namespace harness::run
