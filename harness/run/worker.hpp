// The worker: one backend, run inside its own process (`harness __worker`). It loads the plugin,
// builds the session, runs the steps and writes its BackendRun as JSON for the parent to read.
#pragma once

#include <string>

namespace harness::run {

// Runs the job in `job_file` (run/job_file.hpp: the harness resolved it; the config is not read
// again) in this process; never throws: every failure becomes the status and message of the
// BackendRun written to its result path. Returns the process exit code.
int worker_main(const std::string& job_file);

}  // namespace harness::run
