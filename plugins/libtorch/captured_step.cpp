#include "captured_step.hpp"

#include "hb/plugin.hpp"

#if HB_LIBTORCH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace hb_libtorch {

#if HB_LIBTORCH_CUDA

struct CapturedStep::Impl {
    explicit Impl(const c10::Device& device)
        : stream(c10::cuda::getStreamFromPool(false, device.index())) {}
    c10::cuda::CUDAStream stream;
    at::cuda::CUDAGraph graph;
    bool captured = false;
};

bool CapturedStep::supported() {
    return true;
}

CapturedStep::CapturedStep(const c10::Device& device) : impl_(std::make_unique<Impl>(device)) {}

void CapturedStep::on_stream(const std::function<void()>& work) {
    const c10::cuda::CUDAStream caller =
        c10::cuda::getCurrentCUDAStream(impl_->stream.device_index());
    // Whatever the caller queued (state or batch uploads) must be visible to the step, and the
    // step's results to whatever the caller queues next.
    at::cuda::CUDAEvent before;
    before.record(caller);
    before.block(impl_->stream);
    {
        c10::cuda::CUDAStreamGuard guard(impl_->stream);
        work();
    }
    at::cuda::CUDAEvent after;
    after.record(impl_->stream);
    after.block(caller);
}

void CapturedStep::capture(const std::function<void()>& step) {
    impl_->graph.capture_begin();
    try {
        step();
    } catch (...) {
        try {
            impl_->graph.capture_end();
        } catch (...) {
        }
        throw;
    }
    impl_->graph.capture_end();
    impl_->captured = true;
}

void CapturedStep::replay() {
    impl_->graph.replay();
}

bool CapturedStep::captured() const {
    return impl_->captured;
}

#else

struct CapturedStep::Impl {};

bool CapturedStep::supported() {
    return false;
}

CapturedStep::CapturedStep(const c10::Device&) {
    throw hb::Error("option 'cuda_graphs' needs a LibTorch built with CUDA", HB_UNSUPPORTED);
}

void CapturedStep::on_stream(const std::function<void()>& work) {
    work();
}

void CapturedStep::capture(const std::function<void()>&) {}

void CapturedStep::replay() {}

bool CapturedStep::captured() const {
    return false;
}

#endif

CapturedStep::~CapturedStep() = default;

}  // namespace hb_libtorch
