// The events of a profiled step (ABI 2.1, docs/design.md §3 "Profiling"): a plugin keeps one
// EventLog, starts it at each step and adds one event per operation it runs. Host work is timed
// with EventLog::Scope; device work is timed by the plugin (events on its stream) and added with
// EventLog::add once the step has completed. While profiling is off, begin_step and Scope do
// nothing but test one flag, so an unprofiled step costs what it did before.
#pragma once

#include "hb/plugin.h"

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace hb {

inline const char* to_string(hb_phase phase) {
    switch (phase) {
        case HB_PHASE_FORWARD:
            return "forward";
        case HB_PHASE_BACKWARD_DATA:
            return "backward_data";
        case HB_PHASE_BACKWARD_WEIGHTS:
            return "backward_weights";
        case HB_PHASE_BACKWARD:
            return "backward";
        case HB_PHASE_UPDATE:
            return "update";
        case HB_PHASE_LOSS:
            return "loss";
        case HB_PHASE_REORDER:
            return "reorder";
        case HB_PHASE_TRANSFER:
            return "transfer";
        case HB_PHASE_OTHER:
            break;
    }
    return "other";
}

// A layer pass's event: "<kind>_forward" or "<kind>_backward" ("conv2d_forward").
inline const char* layer_event_name(hb_layer_kind kind, bool forward) {
    static const char* const names[][2] = {
        {"conv2d_forward", "conv2d_backward"},     {"batchnorm_forward", "batchnorm_backward"},
        {"relu_forward", "relu_backward"},         {"maxpool2d_forward", "maxpool2d_backward"},
        {"upsample_forward", "upsample_backward"}, {"add_forward", "add_backward"},
        {"mse_loss_forward", "mse_loss_backward"}};
    const auto k = static_cast<size_t>(kind);
    if (k >= sizeof names / sizeof names[0]) return forward ? "forward" : "backward";
    return names[k][forward ? 0 : 1];
}

class EventLog {
public:
    using Clock = std::chrono::steady_clock;

    bool enabled() const { return enabled_; }
    void set_enabled(bool enabled) {
        enabled_ = enabled;
        events_.clear();
    }

    // Forgets the previous step's events and starts this step's clock.
    void begin_step() {
        events_.clear();
        if (enabled_) start_ = Clock::now();
    }

    // Milliseconds on the host's clock since begin_step.
    double now_ms() const {
        return std::chrono::duration<double, std::milli>(Clock::now() - start_).count();
    }

    // An operation timed elsewhere; `name` and `track` are copied.
    void add(std::string_view name, int32_t layer, hb_phase phase, double start_ms, double end_ms,
             std::string_view track = "main") {
        events_.push_back({intern(name), layer, phase, intern(track), start_ms, end_ms});
    }

    // Times one host operation from construction to destruction on the track "main", when the
    // log is enabled. `name` must outlive the step (a literal, or a name the plugin keeps).
    class Scope {
    public:
        Scope(EventLog& log, const char* name, int32_t layer, hb_phase phase)
            : log_(log.enabled_ ? &log : nullptr), name_(name), layer_(layer), phase_(phase) {
            if (log_) start_ms_ = log_->now_ms();
        }
        ~Scope() {
            if (log_)
                log_->events_.push_back({name_, layer_, phase_, "main", start_ms_, log_->now_ms()});
        }
        Scope(const Scope&) = delete;
        Scope& operator=(const Scope&) = delete;

    private:
        EventLog* log_;
        const char* name_;
        int32_t layer_;
        hb_phase phase_;
        double start_ms_ = 0;
    };

    const std::vector<hb_event>& events() const { return events_; }

private:
    // One copy of each name for the life of the log (a deque never moves its elements), found
    // without making a string.
    const char* intern(std::string_view s) {
        auto it = index_.find(s);
        if (it != index_.end()) return it->second;
        const std::string& stored = names_.emplace_back(s);
        index_.emplace(stored, stored.c_str());
        return stored.c_str();
    }

    bool enabled_ = false;
    Clock::time_point start_{};
    std::vector<hb_event> events_;
    std::deque<std::string> names_;
    std::unordered_map<std::string_view, const char*> index_;
};

}  // namespace hb
