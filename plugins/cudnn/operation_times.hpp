// The times of a profiled step's operations (docs/design.md §3 "Profiling"): each operation of
// step_operations (operations.hpp) is enqueued between two marks on the step's stream, after a
// mark that starts the step; once the step has completed, each operation becomes an event whose
// start and end are milliseconds from that first mark. The marks are a MarkClock's: CUDA events
// of one pool on the device (EventPool, events.hpp), created once when profiling is first turned
// on and reused by every step; a fake clock in the tests.
//
// Unprofiled, run() tests one flag and enqueues the operation: nothing is recorded.
//
// A captured step (the cuda_graphs option) is captured with the marks of its operations when it is
// captured profiled: they become event-record nodes of the graph (record_event, events.hpp), so
// each replay records them again, on the same events. replay_graph() then stands for the
// operations the graph enqueues.
#pragma once

#include "hb/profile.hpp"
#include "operations.hpp"

#include <cstddef>
#include <memory>
#include <string_view>
#include <utility>

namespace hb_cudnn {

// Marks recorded in the order of one stream.
class MarkClock {
public:
    virtual ~MarkClock() = default;
    // At least `marks` marks, numbered from 0; the ones there are kept.
    virtual void reserve(size_t marks) = 0;
    // Enqueues mark `mark` on the stream.
    virtual void record(size_t mark) = 0;
    // Milliseconds from mark `from` to mark `to`, once both were reached.
    virtual double elapsed_ms(size_t from, size_t to) const = 0;
};

class OperationTimes {
public:
    OperationTimes() = default;  // no operations: every step runs unprofiled
    // The clock gets 2 marks per operation and the step's start, once, here.
    OperationTimes(StepOperations operations, std::unique_ptr<MarkClock> clock);

    bool prepared() const { return clock_ != nullptr; }
    size_t marks() const { return 2 * plan_.operations.size() + 1; }
    const StepOperations& operations() const { return plan_; }

    // Starts a step, profiled or not; a profiled one records the start mark.
    void begin_step(bool profiled);
    bool active() const { return active_; }

    // Enqueues one operation; in a profiled step between its two marks, after checking that it
    // is the next one of step_operations (else hb::Error, naming both).
    template <class Enqueue>
    void run(const Operation& operation, Enqueue&& enqueue) {
        if (!active_) {
            std::forward<Enqueue>(enqueue)();
            return;
        }
        const size_t i = start(operation);
        std::forward<Enqueue>(enqueue)();
        clock_->record(2 * i + 2);
    }

    // The captured step was launched: its operations' marks are the graph's own nodes, recorded
    // by the replay. In a profiled step, the next operation must be the graph's first.
    void replay_graph();

    // Ends the step without its events (a step that threw): nothing more is expected of it.
    void end_step() {
        active_ = false;
        next_ = 0;
    }

    // After the step has completed: each operation of a profiled step added to `log` on `track`,
    // in step order. Throws when the step did not run every operation.
    void finish(hb::EventLog& log, std::string_view track);

private:
    size_t start(const Operation& operation);  // checks, records its start mark, returns its index

    StepOperations plan_;
    std::unique_ptr<MarkClock> clock_;
    bool active_ = false;
    size_t next_ = 0;  // the index of the next operation of a profiled step
};

}  // namespace hb_cudnn
