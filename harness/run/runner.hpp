// `harness run`: every selected backend entry in its own worker process, one after another, the
// results rewritten atomically after each so that an interrupted run keeps the finished rows.
#pragma once

#include "config/config.hpp"
#include "results/record.hpp"
#include "run/worker_job.hpp"

#include <functional>
#include <string>
#include <vector>

namespace harness::run {

struct RunRequest {
    std::string config_path;
    std::vector<int> entries;  // indices into config.backends, in run order
    StepCounts overrides;
    std::string csv_path, json_path;
    bool announce = true;  // one line per backend on stderr
    // Called with each finished row before it is written.
    std::function<void(results::BackendRun&)> on_finished;
};

struct RunOutcome {
    results::Provenance provenance;
    std::vector<results::BackendRun> runs;
    bool interrupted = false;
};

RunOutcome run_backends(const config::RunConfig& config, const RunRequest& request);

// True for the statuses that make `harness run` exit with 1.
bool is_failure(results::Status status);

}  // namespace harness::run
