#include "phase_events.hpp"

#if HB_LIBTORCH_CUDA
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace hb_libtorch {

#if HB_LIBTORCH_CUDA

struct PhaseEvents::Impl {
    c10::DeviceIndex device = 0;
    cudaEvent_t events[marks] = {};
    double between(Mark from, Mark to) const;
};

PhaseEvents::PhaseEvents(const c10::Device& device) : impl_(std::make_unique<Impl>()) {
    impl_->device = device.index();
    c10::cuda::CUDAGuard guard(impl_->device);
    for (cudaEvent_t& e : impl_->events) C10_CUDA_CHECK(cudaEventCreate(&e));
}

PhaseEvents::~PhaseEvents() {
    for (cudaEvent_t e : impl_->events)
        if (e) cudaEventDestroy(e);
}

void PhaseEvents::record(Mark mark) {
    const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(impl_->device).stream();
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    C10_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
    // Inside a capture only an external event node is replayed; outside, CUDA rejects that flag.
    const unsigned int flags =
        status == cudaStreamCaptureStatusActive ? cudaEventRecordExternal : cudaEventRecordDefault;
    C10_CUDA_CHECK(cudaEventRecordWithFlags(impl_->events[mark], stream, flags));
}

double PhaseEvents::Impl::between(Mark from, Mark to) const {
    float ms = 0;
    C10_CUDA_CHECK(cudaEventElapsedTime(&ms, events[from], events[to]));
    return double(ms);
}

void PhaseEvents::read_passes(hb::StepResult& result) const {
    result.forward_ms = impl_->between(start, forward_end);
    result.backward_ms = impl_->between(forward_end, backward_end);
}

void PhaseEvents::read_update(hb::StepResult& result) const {
    result.optimizer_ms = impl_->between(update_start, end);
}

#else

struct PhaseEvents::Impl {};

PhaseEvents::PhaseEvents(const c10::Device&) {
    throw hb::Error("phase times on CUDA need a LibTorch built with CUDA", HB_UNSUPPORTED);
}

PhaseEvents::~PhaseEvents() = default;

void PhaseEvents::record(Mark) {}

void PhaseEvents::read_passes(hb::StepResult&) const {}

void PhaseEvents::read_update(hb::StepResult&) const {}

#endif

}  // namespace hb_libtorch
