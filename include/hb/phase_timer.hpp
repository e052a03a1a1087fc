// A step's phase times (hb::StepResult's forward_ms, backward_ms and optimizer_ms) on the host's
// steady clock. Header-only, standard library only.
#pragma once

#include <chrono>

namespace hb {

using Clock = std::chrono::steady_clock;

inline double milliseconds(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double, std::milli>(to - from).count();
}

// Started when constructed; each lap() returns the milliseconds since the previous lap (or the
// start): a CPU backend's forward, backward and update, in turn. A device backend times its
// phases on the device instead.
class PhaseTimer {
public:
    double lap() {
        const Clock::time_point now = Clock::now();
        const double ms = milliseconds(last_, now);
        last_ = now;
        return ms;
    }

private:
    Clock::time_point last_ = Clock::now();
};

}  // namespace hb
