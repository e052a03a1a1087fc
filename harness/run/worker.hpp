// The worker: one backend, run inside its own process (`harness __worker`). It loads the plugin,
// builds the session, runs the steps and writes its BackendRun as JSON for the parent to read.
#pragma once

#include "run/worker_job.hpp"

namespace harness::run {

// Runs the job in this process; never throws: every failure becomes the status and message of
// the BackendRun written to job.result_path. Returns the process exit code.
int worker_main(const WorkerJob& job);

}  // namespace harness::run
