// Recording the step's events, eagerly or while the step is captured into a CUDA graph: its phase
// events, and the pool of events that times each operation of a profiled step.
#pragma once

#include "check.hpp"
#include "handles.hpp"
#include "hb/error.hpp"
#include "operation_times.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

namespace hb_cudnn {

// While a stream is captured, an event must become an external event-record node of the graph
// (cudaEventRecordExternal) so that each replay records it; outside capture CUDA rejects that
// flag.
inline unsigned int event_record_flags(cudaStreamCaptureStatus status) {
    return status == cudaStreamCaptureStatusActive ? cudaEventRecordExternal
                                                   : cudaEventRecordDefault;
}

inline void record_event(cudaEvent_t event, cudaStream_t stream) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    HB_CHECK(cudaStreamIsCapturing(stream, &status));
    HB_CHECK(cudaEventRecordWithFlags(event, stream, event_record_flags(status)));
}

// The marks of OperationTimes as timing events on one stream. The events are created by reserve
// (outside any capture: a captured step keeps recording the same ones) and live as long as the
// pool, so a graph captured with them must go first.
class EventPool : public MarkClock {
public:
    explicit EventPool(cudaStream_t stream) : stream_(stream) {}

    void reserve(size_t marks) override {
        events_.reserve(marks);
        while (events_.size() < marks) events_.push_back(make_event());
    }
    void record(size_t mark) override {
        if (mark >= events_.size())
            throw hb::Error("profiling: mark " + std::to_string(mark) + " of a pool of " +
                            std::to_string(events_.size()) + " events");
        record_event(events_[mark].get(), stream_);
    }
    double elapsed_ms(size_t from, size_t to) const override {
        float ms = 0;
        HB_CHECK(cudaEventElapsedTime(&ms, events_.at(from).get(), events_.at(to).get()));
        return ms;
    }
    size_t size() const { return events_.size(); }

private:
    cudaStream_t stream_;
    std::vector<Event> events_;
};

}  // namespace hb_cudnn
