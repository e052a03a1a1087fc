// Recording the step's phase events, eagerly or while the step is captured into a CUDA graph.
#pragma once

#include "check.hpp"

#include <cuda_runtime_api.h>

namespace cudnn_backend {

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

}  // namespace cudnn_backend
