#include "phase_events.hpp"

#if HB_LIBTORCH_CUDA
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace libtorch_backend {

#if HB_LIBTORCH_CUDA

struct PhaseEvents::Impl {
    c10::DeviceIndex device = 0;
    cudaEvent_t events[marks] = {};
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

void PhaseEvents::read(hb::StepResult& result) const {
    auto between = [&](Mark from, Mark to) {
        float ms = 0;
        C10_CUDA_CHECK(cudaEventElapsedTime(&ms, impl_->events[from], impl_->events[to]));
        return double(ms);
    };
    result.forward_ms = between(start, forward_end);
    result.backward_ms = between(forward_end, backward_end);
    result.optimizer_ms = between(backward_end, end);
}

#else

struct PhaseEvents::Impl {};

PhaseEvents::PhaseEvents(const c10::Device&) {
    throw hb::Error("phase times on CUDA need a LibTorch built with CUDA", HB_UNSUPPORTED);
}

PhaseEvents::~PhaseEvents() = default;

void PhaseEvents::record(Mark) {}

void PhaseEvents::read(hb::StepResult&) const {}

#endif

}  // namespace libtorch_backend
