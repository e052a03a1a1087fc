#include "devices.hpp"

#include "hb/plugin.hpp"

#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/util/Exception.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <sys/resource.h>

#if HB_LIBTORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace hb_libtorch {
namespace {

// cuDNN 9 encodes its version as major * 10000 + minor * 100 + patch, earlier ones as
// major * 1000 + minor * 100 + patch.
std::string format_cudnn(long v) {
    const long major = v >= 90000 ? v / 10000 : v / 1000;
    const long minor = v >= 90000 ? (v % 10000) / 100 : (v % 1000) / 100;
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
}

}  // namespace

std::string libtorch_version() {
    return TORCH_VERSION;
}

bool built_with_cuda() {
    // The CPU-only hooks throw where the CUDA ones answer with a compile-time constant, so this
    // works without a device and without the c10_cuda headers.
    try {
        return at::detail::getCUDAHooks().versionCUDART() > 0;
    } catch (const c10::Error&) {
        return false;
    }
}

std::string cuda_version() {
    if (!built_with_cuda()) return "";
    const long v = at::detail::getCUDAHooks().versionCUDART();
    return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string cudnn_version() {
    if (!built_with_cuda()) return "";
    try {
        if (!at::detail::getCUDAHooks().compiledWithCuDNN()) return "";
        return format_cudnn(at::detail::getCUDAHooks().versionCuDNN());
    } catch (const c10::Error&) {
        return "";
    }
}

int cuda_device_count() {
    return built_with_cuda() ? static_cast<int>(torch::cuda::device_count()) : 0;
}

std::string cuda_unavailable_reason() {
    if (!built_with_cuda()) return "LibTorch " + libtorch_version() + " was built without CUDA";
    if (cuda_device_count() == 0)
        return "no CUDA device visible (LibTorch " + libtorch_version() + ", CUDA " +
               cuda_version() + ")";
    return "";
}

std::string cuda_device_description(int index) {
#if HB_LIBTORCH_CUDA
    const auto* p = at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(index));
    return std::string(p->name) + ", " + std::to_string(p->totalGlobalMem / (uint64_t{1} << 20)) +
           " MiB, sm_" + std::to_string(p->major) + std::to_string(p->minor);
#else
    return "CUDA device " + std::to_string(index);
#endif
}

void* current_stream(const c10::Device& device) {
#if HB_LIBTORCH_CUDA
    return c10::cuda::getCurrentCUDAStream(device.index()).stream();
#else
    throw hb::Error("the CUDA stream of " + device.str() + " needs a LibTorch built with CUDA",
                    HB_UNSUPPORTED);
#endif
}

void synchronize(const c10::Device& device) {
    if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

uint64_t peak_memory_bytes(const c10::Device& device) {
    if (device.is_cuda()) {
#if HB_LIBTORCH_CUDA
        const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
        return static_cast<uint64_t>(stats.allocated_bytes[0].peak);
#else
        throw hb::Error("peak memory on CUDA needs the c10_cuda library, absent from this build",
                        HB_UNSUPPORTED);
#endif
    }
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<uint64_t>(usage.ru_maxrss) * 1024;
}

void reset_peak_memory(const c10::Device& device) {
#if HB_LIBTORCH_CUDA
    if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
#else
    (void)device;
#endif
}

}  // namespace hb_libtorch
