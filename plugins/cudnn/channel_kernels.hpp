// Per-channel work over N, H and W that bf16 math does with the backend's own kernels: batch
// normalisation in training mode (optionally with the ReLU after it) and a convolution's bias.
// Sums run in double, in a fixed order, so a step is repeatable; the arithmetic per channel and
// per element is math::batchnorm_* (kernel_math.hpp).
#pragma once

#include "options.hpp"
#include "plan.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hb_cudnn {
namespace kernels {

// Device scratch one call on a tensor of `shape` needs. The calls of a step run in order on one
// stream, so one buffer of the largest size serves them all.
int64_t channel_scratch_bytes(const Shape& shape, bool nhwc);

struct BatchNormTensors {
    const float* gamma = nullptr;
    const float* beta = nullptr;
    float* running_mean = nullptr;
    float* running_var = nullptr;
    float* saved = nullptr;  // 2 C floats: the batch mean, then the inverse deviation
    double momentum = 0.1, eps = 1e-5;
    bool fused_relu = false;
};

void batchnorm_forward(Storage storage, const void* x, void* y, const Shape& shape, bool nhwc,
                       const BatchNormTensors& bn, void* scratch, cudaStream_t stream);
// `y` is the layer's output, the ReLU's when fused (read for its mask only then); `dx` may be
// null when the input needs no gradient. dgamma and dbeta are overwritten.
void batchnorm_backward(Storage storage, const void* x, const void* y, const void* dy, void* dx,
                        bool accumulate, float* dgamma, float* dbeta, const Shape& shape, bool nhwc,
                        const BatchNormTensors& bn, void* scratch, cudaStream_t stream);

// y += bias (one float per channel of `shape`, the output's); dbias = the sums of dy.
void bias_forward(Storage storage, void* y, const float* bias, const Shape& shape, bool nhwc,
                  cudaStream_t stream);
void bias_backward(Storage storage, const void* dy, float* dbias, const Shape& shape, bool nhwc,
                   void* scratch, cudaStream_t stream);

}  // namespace kernels
}  // namespace hb_cudnn
