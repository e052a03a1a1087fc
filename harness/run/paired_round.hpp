// A round of paired steps (docs/statistics.md, "Paired steps"): the round's workers alive
// together, as many as memory allows, each set up and warmed up while the others are stopped,
// then their timed steps taken one at a time in slots (one step of every worker with steps left,
// in an order drawn anew for each slot), so that a burst or a drift of the machine falls on every
// backend alike and each backend's steps lie between the others'.
#pragma once

#include "config/config.hpp"
#include "output/record.hpp"
#include "run/worker_job.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

namespace harness::run {

class ProgressLine;  // run/progress.hpp

struct PairedJob {
    WorkerJob job;         // a timed run of one process
    int iterations = 0;    // its timed steps
    double timeout_s = 0;  // the longest its start, one step or its end may take
};

// How many workers can be alive together: the peak resident memory each job's worker reached
// (VmHWM once it was ready), kept from round to round.
class MemoryBook {
public:
    // Whether job `job`'s worker may start beside `alive` others: always when alone; else when
    // the memory available now (MemAvailable, the stopped workers' memory already taken) holds
    // kHeadroom times its expected peak: its own from an earlier round, or else the largest seen
    // so far (none seen: it starts).
    bool admits(size_t job, size_t alive) const;
    void record(size_t job, double peak_bytes);

    static constexpr double kHeadroom = 1.25;

private:
    std::map<size_t, double> peak_;
};

struct PairedRoundHooks {
    std::function<void(size_t)> on_start;  // job i's worker is about to start
    // Job i's worker ended with this row (its step_sequence filled in), the harness having spent
    // `seconds` on it alone: its start, its steps and its end.
    std::function<void(size_t, output::BackendRun, double seconds)> on_row;
};

// Runs `jobs` as round `round`: starts their workers in `order` while `memory` admits them, takes
// their timed steps in slots whose orders step_order draws from `seed`, ends each worker once it
// has taken its steps and then starts the next one memory admits, until every job has its row.
// Interrupted (plugin_host::interrupted()): every live worker ends with the steps it took, and no
// other starts.
void run_paired_round(const config::RunConfig& config, const std::vector<PairedJob>& jobs,
                      const std::vector<size_t>& order, uint64_t seed, int round,
                      MemoryBook& memory, ProgressLine* progress, const PairedRoundHooks& hooks);

}  // namespace harness::run
