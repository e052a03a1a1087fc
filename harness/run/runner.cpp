#include "run/runner.hpp"

#include "exit_codes.hpp"
#include "model/hourglass.hpp"
#include "output/reporter.hpp"
#include "output/scaling.hpp"
#include "plugin_host/child_process.hpp"
#include "plugin_host/library_output.hpp"
#include "plugin_host/scratch_dir.hpp"
#include "run/paired_round.hpp"
#include "run/progress.hpp"
#include "run/provenance.hpp"
#include "run/round_order.hpp"
#include "run/worker_launch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

namespace harness::run {

namespace fs = std::filesystem;

namespace {

struct Job {
    int entry, ranks;
};

// What each job is to run, for the progress line's time left: its steps and FLOPs (later_flops is
// filled in as the rounds go).
std::vector<ProgressPlan> progress_plans(const config::RunConfig& config,
                                         const RunRequest& request, const std::vector<Job>& jobs) {
    std::vector<ProgressPlan> plans(jobs.size());
    if (!request.timed_steps) return plans;
    const model::Graph graph = model::build_hourglass(config.model);
    for (size_t i = 0; i < jobs.size(); ++i) {
        const output::BackendRun run =
            describe_entry(config, config.backends.at(static_cast<size_t>(jobs[i].entry)),
                           request.overrides, graph);
        plans[i] = {run.warmup, run.iterations, request.profiling.steps,
                    static_cast<double>(run.flops_per_step), 0};
    }
    return plans;
}

// "round 2/3", or "round 4 of 3-10" when the plan's rounds are not fixed.
std::string round_text(const output::RoundPlan& plan, int round) {
    if (plan.min_rounds == plan.max_rounds)
        return fmt::format("round {}/{}", round, plan.max_rounds);
    return fmt::format("round {} of {}-{}", round, plan.min_rounds, plan.max_rounds);
}

// Why the run ran the rounds it did, for stderr.
std::string stop_text(const output::RoundPlan& plan, const RunOutcome& outcome) {
    const std::string rounds =
        fmt::format("{} round{}", outcome.rounds, outcome.rounds == 1 ? "" : "s");
    switch (outcome.stop) {
        case Stop::target:
            return fmt::format(
                "rounds: stopped after {}: every interval against {} within ±{:g}% of its ratio",
                rounds, plan.baseline, 100 * plan.target);
        case Stop::budget:
            return fmt::format(
                "rounds: stopped after {}{}: another would end past the budget of {}", rounds,
                outcome.rounds < plan.min_rounds
                    ? fmt::format(", fewer than the least {}", plan.min_rounds)
                    : "",
                duration_text(1000 * plan.budget_s));
        case Stop::nothing_ran:
            return fmt::format("rounds: stopped after {}: no backend ran to run again", rounds);
        default:
            return plan.min_rounds == plan.max_rounds
                       ? fmt::format("rounds: {}, as planned", outcome.rounds)
                       : fmt::format("rounds: stopped after {}, the most the plan allows", rounds);
    }
}

double flops_of(const ProgressPlan& p) {
    return (p.warmup + p.timed + p.profiled) * p.flops_per_step;
}

WorkerJob job_of(const RunRequest& request, int index, int ranks, int round,
                 const fs::path& scratch) {
    WorkerJob job;
    job.backend = index;
    job.overrides = request.overrides;
    job.profiling = request.profiling;
    job.ranks = ranks;
    job.result_path =
        (scratch / fmt::format("worker-{}-{}-{}.json", round, index, ranks)).string();
    if (request.adjust_job) request.adjust_job(job);
    return job;
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
    output::Provenance provenance = collect_provenance(config);
    provenance.rounds = request.rounds;
    if (request.rounds.max_rounds > 1) provenance.order_seed = request.order_seed;
    // Before the first backend, so that a user can stop a run whose timings would be spoilt.
    if (request.announce) std::fputs(output::environment_warning_lines(provenance).c_str(), stderr);
    reporter.report_context(provenance);
    plugin_host::ScratchDir scratch;
    // Each entry at each of the config's rank counts (docs/parallel.md), or once as a plain run.
    std::vector<Job> jobs;
    for (int entry : request.entries) {
        if (config.parallel.ranks.empty() || request.one_process) {
            jobs.push_back({entry, 0});
            continue;
        }
        for (int ranks : config.parallel.ranks) jobs.push_back({entry, ranks});
    }
    const output::RoundPlan& plan = request.rounds;
    const bool one_round = plan.max_rounds <= 1;
    ProgressLine progress(request.announce && ProgressLine::wanted(request.quiet));
    const std::vector<ProgressPlan> plans =
        progress.enabled() ? progress_plans(config, request, jobs) : std::vector<ProgressPlan>();
    std::vector<bool> repeated(jobs.size(), true);  // whether a job runs in the rounds to come
    // Paired steps (docs/statistics.md): a timed run of rounds, each job one process.
    const bool paired = plan.paired_steps && !one_round && !request.one_process &&
                        !request.adjust_job && config.parallel.ranks.empty();
    std::vector<int> iterations(jobs.size());
    if (paired) {
        const model::Graph graph = model::build_hourglass(config.model);
        for (size_t i = 0; i < jobs.size(); ++i)
            iterations[i] =
                describe_entry(config, config.backends.at(static_cast<size_t>(jobs[i].entry)),
                               request.overrides, graph)
                    .iterations;
    }
    MemoryBook memory;
    const auto start = std::chrono::steady_clock::now();
    auto seconds_since = [](std::chrono::steady_clock::time_point t) {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    };
    // The longest time each job's worker has taken the harness, for the next round's estimate.
    std::vector<double> job_seconds(jobs.size(), 0);
    for (int round = 1; !outcome.interrupted; ++round) {
        outcome.rounds = round;
        // The rounds expected: the plan's least, or this one when past it.
        const int rounds = std::max(plan.min_rounds, round);
        std::vector<size_t> order;
        if (one_round) {
            for (size_t i = 0; i < jobs.size(); ++i) order.push_back(i);
        } else {
            for (size_t i : round_order(jobs.size(), request.order_seed, round))
                if (repeated[i]) order.push_back(i);
        }
        auto announce = [&](size_t n) {
            const auto [index, ranks] = jobs[order[n]];
            const auto& entry = config.backends.at(static_cast<size_t>(index));
            if (request.announce)
                std::fprintf(stderr, "[%s%zu/%zu] %s (%s on %s%s)\n",
                             one_round ? "" : (round_text(plan, round) + ", ").c_str(),
                             n + 1, order.size(), entry.name.c_str(), entry.plugin.c_str(),
                             entry.device.c_str(),
                             ranks > 0
                                 ? fmt::format(", {} rank{}", ranks, ranks > 1 ? "s" : "").c_str()
                                 : "");
        };
        // A finished worker's row: kept, said and reported at once.
        auto finished = [&](size_t job, output::BackendRun run, double seconds) {
            job_seconds[job] = std::max(job_seconds[job], seconds);
            run.round = round;
            if (round == 1) repeated[job] = run.status == output::Status::ok;
            if (request.on_finished) request.on_finished(run);
            if (request.announce)
                std::fprintf(stderr, "      %s%s%s%s\n", paired ? (run.name() + ": ").c_str() : "",
                             output::to_string(run.status), run.message.empty() ? "" : ": ",
                             run.message.c_str());
            // A failure's reason may be in what the libraries wrote; otherwise a count is enough.
            if (request.announce)
                std::fputs(plugin_host::log_tail_for_console(
                               run.log, is_failure(run.status) ? plugin_host::kFailureLogLines : 0,
                               "      ")
                               .c_str(),
                           stderr);
            outcome.runs.push_back(std::move(run));
            output::fill_scaling_efficiency(outcome.runs);
            if (request.on_runs) request.on_runs(outcome.runs);
            reporter.report_runs(outcome.runs);
            if (plugin_host::interrupted()) outcome.interrupted = true;
        };
        if (paired) {
            std::vector<PairedJob> round_jobs(jobs.size());
            for (size_t i = 0; i < jobs.size(); ++i) {
                const auto& entry = config.backends.at(static_cast<size_t>(jobs[i].entry));
                round_jobs[i] = {job_of(request, jobs[i].entry, 0, round, scratch.path()),
                                 iterations[i], timeout_of(config, entry)};
            }
            size_t started = 0;
            run_paired_round(
                config, round_jobs, order, request.order_seed, round, memory, &progress,
                {[&](size_t job) {
                     const size_t n = started++;
                     announce(n);
                     if (progress.enabled()) {
                         const auto& entry =
                             config.backends.at(static_cast<size_t>(jobs[job].entry));
                         progress.begin(fmt::format("{} ({})", entry.name, round_text(plan, round)),
                                        plans[job]);
                     }
                 },
                 finished});
            if (plugin_host::interrupted()) outcome.interrupted = true;
        }
        for (size_t n = 0; n < order.size() && !paired; ++n) {
            const auto [index, ranks] = jobs[order[n]];
            const auto& entry = config.backends.at(static_cast<size_t>(index));
            announce(n);
            if (progress.enabled()) {
                // The time left covers this round's later workers and every round still to come.
                ProgressPlan job_plan = plans[order[n]];
                for (size_t later = n + 1; later < order.size(); ++later)
                    job_plan.later_flops += flops_of(plans[order[later]]);
                for (size_t i = 0; i < jobs.size(); ++i)
                    if (repeated[i]) job_plan.later_flops += (rounds - round) * flops_of(plans[i]);
                progress.begin(one_round
                                   ? entry.name
                                   : fmt::format("{} ({})", entry.name, round_text(plan, round)),
                               job_plan);
            }
            const auto worker_start = std::chrono::steady_clock::now();
            output::BackendRun run =
                launch_worker(config, job_of(request, index, ranks, round, scratch.path()),
                              timeout_of(config, entry), &progress);
            progress.end();
            finished(order[n], std::move(run), seconds_since(worker_start));
            if (outcome.interrupted) break;
        }
        if (outcome.interrupted) break;
        // A backend within the target runs no more rounds; the baseline runs while any other does.
        const std::vector<std::string> done =
            within_target(plan, round, outcome.runs, provenance.config_sha256);
        std::vector<std::string> leaving;
        for (size_t i = 0; i < jobs.size(); ++i) {
            const std::string& name = config.backends.at(static_cast<size_t>(jobs[i].entry)).name;
            if (repeated[i] && std::find(done.begin(), done.end(), name) != done.end()) {
                repeated[i] = false;
                leaving.push_back(name);
            }
        }
        double next_round_s = 0;
        for (size_t i = 0; i < jobs.size(); ++i)
            if (repeated[i]) next_round_s += job_seconds[i];
        outcome.stop = stop_after(plan, round, outcome.runs, provenance.config_sha256,
                                  seconds_since(start), next_round_s);
        if (request.announce && outcome.stop == Stop::no && !leaving.empty())
            std::fprintf(stderr,
                         "rounds: %s within ±%g%% of %s ratio after round %d: not run again\n",
                         fmt::format("{}", fmt::join(leaving, ", ")).c_str(), 100 * plan.target,
                         leaving.size() == 1 ? "its" : "their", round);
        if (outcome.stop == Stop::no && std::none_of(repeated.begin(), repeated.end(),
                                                     [](bool again) { return again; }))
            outcome.stop = Stop::nothing_ran;
        if (outcome.stop != Stop::no) break;
    }
    if (!outcome.interrupted) {
        // The files and the table say why the rounds ended.
        provenance.rounds.stopped_by = to_string(outcome.stop);
        if (request.on_end) request.on_end(provenance, outcome.runs);
        reporter.report_context(provenance);
        reporter.report_runs(outcome.runs);
        if (request.announce && !one_round)
            std::fprintf(stderr, "%s\n", stop_text(plan, outcome).c_str());
    }
    reporter.finalize(outcome.runs);
    return outcome;
}

}  // namespace harness::run
