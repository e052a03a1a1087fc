// What a terminal shows while a worker runs: one line rewritten in place from the worker's step
// events (run/step_events.hpp), with the phase, the last step's time, the running median and the
// time left for this worker and, as an estimate, for the whole command. Never in a log, a pipe
// or a dumb terminal; the caller replaces it with the row's own line when the worker ends.
#pragma once

#include "run/step_events.hpp"

#include <chrono>
#include <string>
#include <vector>

namespace harness::run {

// The steps a worker is to run, and how many FLOPs are still to come after it in this command.
struct ProgressPlan {
    int warmup = 0, timed = 0, profiled = 0;  // a check's capture: its steps as `timed`
    double flops_per_step = 0;                // 0: unknown
    double later_flops = 0;                   // the later workers' steps; 0: none or unknown
};

class ProgressLine {
public:
    // Whether stderr can show it: a terminal, TERM not "dumb", and the command not --quiet.
    static bool wanted(bool quiet);

    explicit ProgressLine(bool enabled);
    bool enabled() const { return enabled_; }

    void begin(std::string label, const ProgressPlan& plan);  // a worker starts
    void update(const StepEvent& event);                      // redraws the line
    void end();                                               // erases it

    // The line as drawn for `event`, without the terminal's control sequences (tests).
    std::string text(const StepEvent& event) const;

private:
    double worker_left_ms(const StepEvent& event) const;

    bool enabled_ = false, bold_ = false, drawn_ = false;
    std::string label_;
    ProgressPlan plan_;
    std::vector<double> timed_ms_;
    double last_ms_ = -1;
    // Every step this command has seen, for the estimate of the workers to come.
    double seen_ms_ = 0, seen_flops_ = 0;
};

// "9.84 s", "2 min 40 s", "1 h 05 min".
std::string duration_text(double ms);

}  // namespace harness::run
