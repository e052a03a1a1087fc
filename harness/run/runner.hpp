// `harness run`: every selected backend entry in its own worker process, one after another, round
// after round, each finished run handed to the reporters at once so that an interrupted run keeps
// the finished rows.
#pragma once

#include "config/config.hpp"
#include "output/record.hpp"
#include "run/stopping.hpp"
#include "run/worker_job.hpp"

#include <functional>
#include <string>
#include <vector>

namespace harness::output {
class Reporter;  // output/reporter.hpp
}  // namespace harness::output

namespace harness::run {

struct RunRequest {
    std::string config_path;
    std::vector<int> entries;  // indices into config.backends, in run order
    StepCounts overrides;
    Profiling profiling;
    bool announce = true;  // one line per backend on stderr
    // Called with each finished row before it is reported.
    std::function<void(output::BackendRun&)> on_finished;
    // Called with every run so far after each one finished, before they are reported: for what
    // depends on several runs (whether their losses agree).
    std::function<void(std::vector<output::BackendRun>&)> on_runs;
    // Called once when the rounds end uninterrupted, before the last report: for what is measured
    // after every run (the roofline's ceilings, roofline/run_bound.hpp).
    std::function<void(output::Provenance&, std::vector<output::BackendRun>&)> on_end;
    // Called with each worker's job before it is launched: for a job that is not a timed run.
    std::function<void(WorkerJob&)> adjust_job;
    // Each entry once in one process, whatever the config's `parallel` says (harness layers).
    bool one_process = false;
    // The progress line on a terminal (run/progress.hpp), unless --quiet; with `timed_steps`
    // false (harness layers) it gives no time left, the jobs' steps not being the config's.
    bool quiet = false;
    bool timed_steps = true;
    // Rounds (docs/statistics.md): each entry runs once per round in a fresh worker, the entries
    // of a round in the order round_order draws from `order_seed`, until stop_after says so; a
    // run of one round keeps the request's order. An entry that did not end ok in the first round
    // is not run again.
    output::RoundPlan rounds;
    uint64_t order_seed = 0;
};

struct RunOutcome {
    std::vector<output::BackendRun> runs;
    bool interrupted = false;
    int rounds = 0;        // rounds begun
    Stop stop = Stop::no;  // why no other round was run (no: interrupted)
};

// The reporter hears the provenance first, then every run so far after each run, then finalize:
// also when the run is interrupted. Its exceptions (an output that cannot be written) propagate.
RunOutcome run_backends(const config::RunConfig& config, const RunRequest& request,
                        output::Reporter& reporter);

// True for the statuses that make `harness run` exit with 1.
bool is_failure(output::Status status);

// The exit code of a command that ran backends (exit_codes.hpp): interrupted, a backend failed,
// nothing ran at all (said on stderr, after `command`), or ok.
int exit_code_of(const RunOutcome& outcome, const std::string& command);

}  // namespace harness::run
