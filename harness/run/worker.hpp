// The worker: one backend entry of a config, run inside its own process (`harness __worker`).
// It loads the plugin, builds the session, runs the warm-up and timed steps and writes its
// BackendRun as JSON for the parent to read.
#pragma once

#include "config/config.hpp"
#include "results/record.hpp"

#include <string>

namespace harness::run {

struct StepCounts {
    int warmup = -1, iterations = -1;  // negative = from the config
};

// What a row says about an entry before anything has run: names, options, step counts, sizes.
results::BackendRun describe_entry(const config::RunConfig& config, int index,
                                   const StepCounts& overrides);

// Runs entry `index` of the config at `config_path`; never throws: every failure becomes the
// status and message of the BackendRun written to `result_path`. Returns the process exit code.
int worker_main(const std::string& config_path, int index, const StepCounts& overrides,
                const std::string& result_path);

}  // namespace harness::run
