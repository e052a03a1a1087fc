// The backend's own CUDA kernels: everything cuDNN does not do (or not with the exact semantics
// of docs/design.md §4). Each function enqueues its work on `stream` and checks the launch.
// Activations and their gradients are of the element type `storage` names (float or bf16),
// arithmetic is float. `accumulate` adds into the gradient output instead of overwriting it.
#pragma once

#include "kernel_math.hpp"
#include "options.hpp"
#include "plan.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

namespace hb_cudnn {
namespace kernels {

void relu_forward(Storage storage, const void* x, void* y, int64_t count, cudaStream_t stream);
void relu_backward(Storage storage, const void* y, const void* dy, void* dx, int64_t count,
                   bool accumulate, cudaStream_t stream);

// y = inputs[0] + inputs[1] + ..., in that order.
void add_forward(Storage storage, const std::vector<const void*>& inputs, void* y, int64_t count,
                 cudaStream_t stream);
// Every dx[k] receives dy (added when accumulate[k]).
void add_backward(Storage storage, const void* dy, const std::vector<void*>& dx,
                  const std::vector<bool>& accumulate, int64_t count, cudaStream_t stream);

// 2x2 stride 2; `in` is the input's shape; the gradient goes to the first maximum.
void maxpool_forward(Storage storage, const void* x, void* y, const Shape& in, bool nhwc,
                     cudaStream_t stream);
void maxpool_backward(Storage storage, const void* x, const void* dy, void* dx, const Shape& in,
                      bool nhwc, bool accumulate, cudaStream_t stream);

// Nearest, factor 2; `in` is the input's shape.
void upsample_forward(Storage storage, const void* x, void* y, const Shape& in, bool nhwc,
                      cudaStream_t stream);
void upsample_backward(Storage storage, const void* dy, void* dx, const Shape& in, bool nhwc,
                       bool accumulate, cudaStream_t stream);

// *loss = weight * mean((y - t)^2), summed in double in a fixed order; the target is float.
void mse_loss_forward(Storage storage, const void* y, const float* target, int64_t count,
                      double weight, double* loss, cudaStream_t stream);
void mse_loss_backward(Storage storage, const void* y, const float* target, void* dy, int64_t count,
                       double weight, bool accumulate, cudaStream_t stream);

// One RMSProp update of `count` parameters; `buffer` may be null without momentum. `bf16_copy`,
// when not null, receives the updated parameters rounded to bf16.
void rmsprop(float* param, const float* grad, float* square_average, float* buffer, void* bf16_copy,
             int64_t count, const math::RmsPropParams& params, cudaStream_t stream);

void nchw_to_nhwc(const float* source, float* destination, const Shape& shape, cudaStream_t stream);
void fill(float* data, float value, int64_t count, cudaStream_t stream);

// float <-> bf16 (math::to_bf16: round to nearest even).
void to_bf16(const float* source, void* destination, int64_t count, cudaStream_t stream);
void from_bf16(const void* source, float* destination, int64_t count, cudaStream_t stream);

}  // namespace kernels
}  // namespace hb_cudnn
