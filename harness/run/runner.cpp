#include "run/runner.hpp"

#include "exit_codes.hpp"
#include "model/hourglass.hpp"
#include "output/reporter.hpp"
#include "output/scaling.hpp"
#include "plugin_host/child_process.hpp"
#include "plugin_host/library_output.hpp"
#include "plugin_host/scratch_dir.hpp"
#include "run/progress.hpp"
#include "run/provenance.hpp"
#include "run/worker_launch.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

namespace harness::run {

namespace fs = std::filesystem;

namespace {

// What each job is to run, for the progress line's time left: its steps and FLOPs, and the
// FLOPs of the jobs after it.
std::vector<ProgressPlan> progress_plans(const config::RunConfig& config,
                                         const RunRequest& request,
                                         const std::vector<std::pair<int, int>>& jobs) {
    std::vector<ProgressPlan> plans(jobs.size());
    if (!request.timed_steps) return plans;
    const model::Graph graph = model::build_hourglass(config.model);
    for (size_t i = 0; i < jobs.size(); ++i) {
        const output::BackendRun run =
            describe_entry(config, config.backends.at(static_cast<size_t>(jobs[i].first)),
                           request.overrides, graph);
        plans[i] = {run.warmup, run.iterations, request.profiling.steps,
                    static_cast<double>(run.flops_per_step), 0};
    }
    double later = 0;
    for (size_t i = jobs.size(); i-- > 0;) {
        plans[i].later_flops = later;
        later += (plans[i].warmup + plans[i].timed + plans[i].profiled) * plans[i].flops_per_step;
    }
    return plans;
}

output::BackendRun run_one(const config::RunConfig& config, const RunRequest& request, int index,
                           int ranks, const fs::path& scratch, ProgressLine& progress) {
    WorkerJob job;
    job.config_path = request.config_path;
    job.backend = index;
    job.overrides = request.overrides;
    job.profiling = request.profiling;
    job.ranks = ranks;
    job.result_path = (scratch / fmt::format("worker-{}-{}.json", index, ranks)).string();
    if (request.adjust_job) request.adjust_job(job);
    return launch_worker(config, job,
                         timeout_of(config, config.backends.at(static_cast<size_t>(index))),
                         &progress);
}

}  // namespace

bool is_failure(output::Status status) {
    switch (status) {
        case output::Status::ok:
        case output::Status::skipped:
            return false;
        default:
            return true;
    }
}

int exit_code_of(const RunOutcome& outcome, const std::string& command) {
    if (outcome.interrupted) return kExitInterrupted;
    for (const auto& r : outcome.runs)
        if (is_failure(r.status)) return kExitBackendFailed;
    // Every backend skipped (no plugin built, no device here): nothing was measured, which must
    // not look like a success.
    bool ran = false;
    for (const auto& r : outcome.runs) ran = ran || r.status != output::Status::skipped;
    if (ran) return kExitOk;
    std::fprintf(stderr,
                 "%s: no backend ran: each of the %zu selected was skipped (the reasons are "
                 "above)\n",
                 command.c_str(), outcome.runs.size());
    return kExitNothingRan;
}

RunOutcome run_backends(const config::RunConfig& config, const RunRequest& request,
                        output::Reporter& reporter) {
    plugin_host::install_interrupt_handler();
    RunOutcome outcome;
    const output::Provenance provenance = collect_provenance(config);
    // Before the first backend, so that a user can stop a run whose timings would be spoilt.
    if (request.announce) std::fputs(output::environment_warning_lines(provenance).c_str(), stderr);
    reporter.report_context(provenance);
    plugin_host::ScratchDir scratch;
    // Each entry at each of the config's rank counts (docs/parallel.md), or once as a plain run.
    std::vector<std::pair<int, int>> jobs;
    for (int entry : request.entries) {
        if (config.parallel.ranks.empty() || request.one_process) {
            jobs.emplace_back(entry, 0);
            continue;
        }
        for (int ranks : config.parallel.ranks) jobs.emplace_back(entry, ranks);
    }
    ProgressLine progress(request.announce && ProgressLine::wanted(request.quiet));
    const std::vector<ProgressPlan> plans =
        progress.enabled() ? progress_plans(config, request, jobs) : std::vector<ProgressPlan>();
    for (size_t i = 0; i < jobs.size(); ++i) {
        const auto [index, ranks] = jobs[i];
        const auto& entry = config.backends.at(static_cast<size_t>(index));
        if (request.announce)
            std::fprintf(
                stderr, "[%zu/%zu] %s (%s on %s%s)\n", i + 1, jobs.size(), entry.name.c_str(),
                entry.plugin.c_str(), entry.device.c_str(),
                ranks > 0 ? fmt::format(", {} rank{}", ranks, ranks > 1 ? "s" : "").c_str() : "");
        if (progress.enabled()) progress.begin(entry.name, plans[i]);
        output::BackendRun run = run_one(config, request, index, ranks, scratch.path(), progress);
        progress.end();
        if (request.on_finished) request.on_finished(run);
        if (request.announce)
            std::fprintf(stderr, "      %s%s%s\n", output::to_string(run.status),
                         run.message.empty() ? "" : ": ", run.message.c_str());
        // A failure's reason may be in what the libraries wrote; otherwise a count is enough.
        if (request.announce)
            std::fputs(
                plugin_host::log_tail_for_console(
                    run.log, is_failure(run.status) ? plugin_host::kFailureLogLines : 0, "      ")
                    .c_str(),
                stderr);
        outcome.runs.push_back(std::move(run));
        output::fill_scaling_efficiency(outcome.runs);
        if (request.on_runs) request.on_runs(outcome.runs);
        reporter.report_runs(outcome.runs);
        if (plugin_host::interrupted()) {
            outcome.interrupted = true;
            break;
        }
    }
    reporter.finalize(outcome.runs);
    return outcome;
}

}  // namespace harness::run
