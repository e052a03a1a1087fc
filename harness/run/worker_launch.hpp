#pragma once

#include "config/config.hpp"
#include "output/record.hpp"
#include "plugin_host/child_process.hpp"
#include "run/worker_job.hpp"

namespace harness::run {

class ProgressLine;  // run/progress.hpp

// Runs `job` in a child `harness __worker` process with a time limit and returns the row it
// wrote; a crash, a timeout, an interruption or a missing result becomes the row's status. With
// an enabled `progress`, the worker's step events redraw it (not through mpirun: its ranks do
// not inherit the pipe).
output::BackendRun launch_worker(const config::RunConfig& config, const WorkerJob& job,
                                 double timeout_s, ProgressLine* progress = nullptr);

// The row of `job`'s worker, which ended as `exit` says (its time limit having been `timeout_s`),
// with what the libraries wrote; the worker's log and job file are removed.
output::BackendRun finish_row(const config::RunConfig& config, const WorkerJob& job,
                              const plugin_host::ExitInfo& exit, double timeout_s);

// The time limit of a backend entry: its own, else the config's.
double timeout_of(const config::RunConfig& config, const config::BackendEntry& entry);

}  // namespace harness::run
