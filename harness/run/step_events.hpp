// What a worker tells the harness while it runs, so that a terminal can show where a long run is:
// one line per event ("timed 4 20 9843.1") on a pipe the harness hands it (`--progress-fd`),
// written between steps, never inside a timed one.
#pragma once

#include <optional>
#include <string>

namespace harness::run {

struct StepEvent {
    // loading (the plugin and its session), warmup, timed, profiling, capture (a check's steps),
    // layers (`harness layers` on the whole step, done 0, or on configuration `done` of `total`).
    std::string phase;
    int done = 0, total = 0;  // steps of this phase done, and in all
    // Non-negative: the time of the step this event reports done (the phase's `done`-th);
    // negative: the phase is under way, no step finished since the last event.
    double last_ms = -1;
};

std::string to_line(const StepEvent& event);  // without the newline
std::optional<StepEvent> parse_step_event(const std::string& line);

// The worker's end: events go to `fd` from open_step_events on; before it, or with a negative fd,
// nowhere. A full pipe drops the event rather than waiting for the harness.
void open_step_events(int fd);
void send_step_event(const StepEvent& event);

}  // namespace harness::run
