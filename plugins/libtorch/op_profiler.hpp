// Per-operation events of a profiled step (ABI 2.1, docs/design.md §3 "Profiling") from ATen's
// RecordFunction callbacks: the outermost operator call or autograd node of each thread is one
// event. The session says which part of the step runs (a layer's forward, the backward pass, the
// optimizer...); autograd nodes are attributed to the layer whose forward created them by their
// sequence numbers. On the CPU operations are timed with the host's clock on the thread that ran
// them; on a CUDA device with events on the stream (DeviceMarks).
//
// The callbacks are thread-local ones, installed on the step's thread by Step and removed when it
// ends, so an unprofiled step runs without any; the autograd engine hands the step's thread-local
// state, callbacks included, to its device threads, which is how a CUDA backward pass is seen.
// One profiled step runs at a time in a process (the callbacks find it through one pointer).
#pragma once

#include "op_events.hpp"

#include "hb/profile.hpp"

#include <c10/core/Device.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

namespace at {
class RecordFunction;
}

namespace hb_libtorch {

class DeviceMarks;

class OpProfiler {
public:
    explicit OpProfiler(const c10::Device& device);
    ~OpProfiler();
    OpProfiler(const OpProfiler&) = delete;
    OpProfiler& operator=(const OpProfiler&) = delete;

    bool enabled() const { return log_.enabled(); }
    void set_enabled(bool enabled);
    // The last step's events: none when it ran unprofiled.
    const std::vector<hb_event>& events() const { return log_.events(); }

    // One step: starts the log's step (dropping the last step's events) and, when profiling is
    // on, installs the callbacks until destruction. Create it at the step's start, on the thread
    // that runs the step.
    class Step {
    public:
        explicit Step(OpProfiler& profiler);
        ~Step();
        Step(const Step&) = delete;
        Step& operator=(const Step&) = delete;
        // The profiler while this step is profiled, else nullptr: what the network and the
        // optimizer are given.
        OpProfiler* profiler() const { return active_; }
        // Once the step's work has completed (synchronised): its events into the log.
        void finish();

    private:
        OpProfiler* active_ = nullptr;
        uint64_t handle_ = 0;
    };

    // The part of the step that runs from now on, until end(): operations that start meanwhile
    // belong to it, and so do the autograd nodes created meanwhile. `timed_as` names a part
    // that runs no operator of its own (dropping the gradients), timed as one operation.
    void begin(profile::Part part, int32_t layer = -1, const char* timed_as = nullptr);
    void end();

    // RecordFunction's callbacks (op_profiler.cpp).
    void on_start(const at::RecordFunction& fn);
    void on_end();

private:
    struct ThreadTrack {
        profile::TrackRecorder recorder;
        std::string name;
    };
    // The calling thread's track in this step, registered on first use.
    profile::TrackRecorder& track();
    void start_record(profile::OpRecord& r);
    void end_record(profile::OpRecord& r);
    // Ends the track's innermost record; RecordFunction comes back on if that record quieted it.
    void close_record(profile::TrackRecorder& t);
    void begin_step();
    void finish_step();

    const bool cuda_;
    std::unique_ptr<DeviceMarks> marks_;  // CUDA devices
    hb::EventLog log_;
    profile::SequenceMap sequence_map_;
    // The current part, read by the autograd engine's threads too.
    std::atomic<int32_t> layer_{-1};
    std::atomic<uint8_t> part_{0};
    uint64_t sequence_begin_ = 0;
    const char* timed_as_ = nullptr;
    uint64_t generation_ = 0;  // this step's number among every profiled step of the process
    std::mutex tracks_mutex_;
    std::vector<std::unique_ptr<ThreadTrack>> tracks_;  // [0] the step's own thread
};

}  // namespace hb_libtorch
