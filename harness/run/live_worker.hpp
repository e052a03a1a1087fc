// A worker of a round whose timed steps the harness interleaves with the other workers' steps
// (docs/statistics.md, "Paired steps"): it loads, sets up and warms up while every other worker
// is stopped, then takes each timed step when the harness writes a byte down its gate, alone on
// the machine; between its steps it is stopped (SIGSTOP), so that neither it nor any thread of its
// libraries takes CPU while another worker steps.
#pragma once

#include "config/config.hpp"
#include "output/record.hpp"
#include "plugin_host/child_process.hpp"
#include "run/event_pipe.hpp"
#include "run/worker_job.hpp"

#include <memory>
#include <optional>

namespace harness::run {

class ProgressLine;  // run/progress.hpp

class LiveWorker {
public:
    // Starts `job` (a timed run of one process, of `iterations` timed steps) in a `harness
    // __worker`; with an enabled `progress`, its events redraw it until it is ready.
    LiveWorker(const config::RunConfig& config, WorkerJob job, int iterations, double timeout_s,
               ProgressLine* progress);
    LiveWorker(const LiveWorker&) = delete;
    LiveWorker& operator=(const LiveWorker&) = delete;

    // Waits until the worker waits for its first timed step, and stops it: true; or until it
    // ended without (skipped, failed, crashed, interrupted, past its time limit): false.
    bool wait_ready();
    // Its next timed step: resumed, told to step, stopped again once the step's event came. After
    // its last timed step it is not stopped: it goes on to finish (its profiled steps, its row).
    // The step's time in ms; NaN when the worker ended instead.
    double step();
    bool ended() const { return exit_.has_value(); }
    int steps_taken() const { return timed_done_; }
    // The worker's peak resident memory so far (VmHWM), read when it became ready; 0: unknown.
    double peak_bytes() const { return peak_bytes_; }
    // Resumes it, closes its gate (a worker still waiting for a step then stops, its row
    // `interrupted` with the steps it took) and waits for it to end: its row, as launch_worker's.
    output::BackendRun finish();

private:
    // Waits for `reached` (true: the child goes on) or the child's end (false).
    template <typename Reached>
    bool wait_for(const Reached& reached);

    const config::RunConfig& config_;
    WorkerJob job_;
    int iterations_;
    double timeout_s_;
    ProgressLine* progress_;
    EventPipe events_, gate_;
    std::unique_ptr<plugin_host::ChildProcess> child_;
    std::optional<plugin_host::ExitInfo> exit_;
    bool ready_ = false;
    int timed_done_ = 0;
    double last_ms_ = -1;
    double peak_bytes_ = 0;
};

// The peak resident memory (VmHWM) of process `pid` in bytes; 0 when it cannot be read.
double peak_resident_bytes(int pid);

// The memory the kernel says can be given to a new process without swapping (MemAvailable), in
// bytes; 0 when it cannot be read.
double available_memory_bytes();

}  // namespace harness::run
