#include "device_marks.hpp"

#include "hb/plugin.hpp"

#if HB_LIBTORCH_CUDA
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <mutex>
#include <vector>
#endif

namespace hb_libtorch {

#if HB_LIBTORCH_CUDA

struct DeviceMarks::Impl {
    c10::DeviceIndex device = 0;
    std::mutex mutex;  // the step's thread and the autograd engine's device thread both record
    profile::MarkPool pool;
    std::vector<cudaEvent_t> events;
    cudaEvent_t step_start = nullptr;

    // Makes sure a mark is free (creating the pool's growth on the device) and takes it.
    uint32_t take() {
        if (const size_t more = pool.shortfall()) {
            c10::cuda::CUDAGuard guard(device);
            for (size_t i = 0; i < more; ++i) {
                cudaEvent_t e = nullptr;
                C10_CUDA_CHECK(cudaEventCreate(&e));
                events.push_back(e);
                pool.grown(1);
            }
        }
        return pool.take();
    }
};

DeviceMarks::DeviceMarks(const c10::Device& device) : impl_(std::make_unique<Impl>()) {
    impl_->device = device.index();
    c10::cuda::CUDAGuard guard(impl_->device);
    C10_CUDA_CHECK(cudaEventCreate(&impl_->step_start));
}

DeviceMarks::~DeviceMarks() {
    for (cudaEvent_t e : impl_->events) cudaEventDestroy(e);
    if (impl_->step_start) cudaEventDestroy(impl_->step_start);
}

void DeviceMarks::begin_step() {
    const std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->pool.begin_step();
    const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(impl_->device).stream();
    C10_CUDA_CHECK(cudaEventRecord(impl_->step_start, stream));
}

uint32_t DeviceMarks::record(int64_t& stream) {
    const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(impl_->device);
    stream = static_cast<int64_t>(current.id());
    const std::lock_guard<std::mutex> lock(impl_->mutex);
    const uint32_t mark = impl_->take();
    C10_CUDA_CHECK(cudaEventRecord(impl_->events[mark], current.stream()));
    return mark;
}

double DeviceMarks::elapsed_ms(uint32_t mark) const {
    float ms = 0;
    C10_CUDA_CHECK(cudaEventElapsedTime(&ms, impl_->step_start, impl_->events.at(mark)));
    return double(ms);
}

#else

struct DeviceMarks::Impl {};

DeviceMarks::DeviceMarks(const c10::Device&) {
    throw hb::Error("profiling on CUDA needs a LibTorch built with CUDA", HB_UNSUPPORTED);
}

DeviceMarks::~DeviceMarks() = default;

void DeviceMarks::begin_step() {}

uint32_t DeviceMarks::record(int64_t& stream) {
    stream = 0;
    return 0;
}

double DeviceMarks::elapsed_ms(uint32_t) const {
    return 0;
}

#endif

}  // namespace hb_libtorch
