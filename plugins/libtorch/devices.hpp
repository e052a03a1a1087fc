// What this LibTorch build and machine offer: library versions, the CPU, the CUDA devices (or why
// there are none), device synchronisation and peak memory.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <string>

namespace hb_libtorch {

std::string libtorch_version();
// Whether LibTorch was built with CUDA, whatever the machine has.
bool built_with_cuda();
// The CUDA runtime and cuDNN versions LibTorch was built with, "" when it has none.
std::string cuda_version();
std::string cudnn_version();

int cuda_device_count();
// Why no CUDA device can be used here; "" when at least one is visible.
std::string cuda_unavailable_reason();
std::string cuda_device_description(int index);

// The cudaStream_t of the current CUDA stream of `device`, a CUDA device.
void* current_stream(const c10::Device& device);
// Returns when every operation queued on `device` has finished.
void synchronize(const c10::Device& device);
// The caching allocator's peak of allocated bytes on a CUDA device since the last
// reset_peak_memory, the process's peak resident set on the CPU (never reset). Throws
// hb::Error(HB_UNSUPPORTED) when this build cannot tell.
uint64_t peak_memory_bytes(const c10::Device& device);
void reset_peak_memory(const c10::Device& device);

}  // namespace hb_libtorch
