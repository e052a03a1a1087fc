#include "operation_times.hpp"

#include "hb/error.hpp"

namespace hb_cudnn {

OperationTimes::OperationTimes(StepOperations operations, std::unique_ptr<MarkClock> clock)
    : plan_(std::move(operations)), clock_(std::move(clock)) {
    if (!clock_) throw hb::Error("profiling: no clock for the step's operations");
    if (plan_.graph_begin > plan_.graph_end || plan_.graph_end > plan_.operations.size())
        throw hb::Error("profiling: the captured operations [" + std::to_string(plan_.graph_begin) +
                        ", " + std::to_string(plan_.graph_end) + ") are not among the step's " +
                        std::to_string(plan_.operations.size()));
    clock_->reserve(marks());
}

void OperationTimes::begin_step(bool profiled) {
    next_ = 0;
    active_ = false;
    if (!profiled) return;
    if (!clock_) throw hb::Error("profiling: the step's operations were not prepared");
    clock_->record(0);
    active_ = true;
}

size_t OperationTimes::start(const Operation& operation) {
    const size_t i = next_;
    if (i >= plan_.operations.size())
        throw hb::Error("profiling: the step ran " + to_string(operation) +
                        " after the last of its " + std::to_string(plan_.operations.size()) +
                        " operations");
    if (operation != plan_.operations[i])
        throw hb::Error("profiling: operation " + std::to_string(i) + " of the step is " +
                        to_string(operation) + ", where step_operations has " +
                        to_string(plan_.operations[i]));
    clock_->record(2 * i + 1);
    ++next_;
    return i;
}

void OperationTimes::replay_graph() {
    if (!active_) return;
    if (next_ != plan_.graph_begin)
        throw hb::Error("profiling: the captured step replayed after operation " +
                        std::to_string(next_) + ", where it begins at " +
                        std::to_string(plan_.graph_begin));
    next_ = plan_.graph_end;
}

void OperationTimes::finish(hb::EventLog& log, std::string_view track) {
    if (!active_) return;
    active_ = false;
    if (next_ != plan_.operations.size())
        throw hb::Error("profiling: the step ran " + std::to_string(next_) + " of its " +
                        std::to_string(plan_.operations.size()) + " operations");
    for (size_t i = 0; i < plan_.operations.size(); ++i) {
        const Operation& o = plan_.operations[i];
        log.add(o.name, o.layer, o.phase, clock_->elapsed_ms(0, 2 * i + 1),
                clock_->elapsed_ms(0, 2 * i + 2), track);
    }
}

}  // namespace hb_cudnn
