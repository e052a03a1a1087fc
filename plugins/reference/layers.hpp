// Forward and backward kernels of every layer kind (docs/design.md §4), in NCHW, templated on the
// scalar type: float in the plugin, double in the finite-difference tests. Convolutions are in
// conv2d.cpp, the other kinds in layers.cpp. Backward kernels add into their gradient outputs (a
// value feeding several layers sums what each sends back), so those buffers start at zero. A
// gradient output may be null when it is not wanted.
#pragma once

#include "gemm.hpp"
#include "hb/graph.hpp"
#include "random_rounding.hpp"
#include "thread_pool.hpp"

#include <cstdint>
#include <vector>

namespace hb_reference {

using Dims = hb::Dims;

struct ConvShape {
    Dims input, output;  // output.c = out_channels
    int64_t kernel = 1, stride = 1, padding = 0;

    // A 1x1 convolution with stride 1 and no padding multiplies the input directly, without im2col.
    bool pointwise() const { return kernel == 1 && stride == 1 && padding == 0; }
    int64_t patch_size() const { return input.c * kernel * kernel; }  // rows of the im2col matrix
    // Elements of the im2col scratch matrix (patch_size x N*OH*OW), 0 when pointwise.
    int64_t workspace_elements() const;
};

// Output size of a convolution along one spatial dimension.
int64_t conv_output_size(int64_t input, int64_t kernel, int64_t stride, int64_t padding);

// y = conv(x, weight) + bias; weight OIHW, bias may be null. `workspace` holds
// shape.workspace_elements() values.
template <class T>
void conv2d_forward(Gemm<T>& gemm, const ConvShape& shape, const T* x, const T* weight,
                    const T* bias, T* y, T* workspace);
template <class T>
void conv2d_backward(Gemm<T>& gemm, const ConvShape& shape, const T* x, const T* weight,
                     const T* dy, T* dx, T* dweight, T* dbias, T* workspace);

// Per-channel batch statistics kept from the forward pass for the backward pass.
struct BatchStatistics {
    std::vector<double> mean, inv_std;  // inv_std = 1 / sqrt(biased variance + eps)
};

struct BatchNormParams {
    double momentum = 0.1, eps = 1e-5;
};

// Training mode: normalise with the batch mean and biased variance over N, H, W, then
// y = gamma * x_hat + beta (gamma, beta may be null: 1 and 0). When given, the running statistics
// become (1 - momentum) r + momentum * batch statistic, with the unbiased variance. The
// statistics are rounded randomly at `site` when `rounding` is on (random_rounding.hpp).
template <class T>
void batchnorm_forward(ThreadPool& pool, const Dims& d, const BatchNormParams& p, const T* x,
                       const T* gamma, const T* beta, T* y, T* running_mean, T* running_var,
                       BatchStatistics& stats, const RandomRounding& rounding = {},
                       uint64_t site = 0);
template <class T>
void batchnorm_backward(ThreadPool& pool, const Dims& d, const T* x, const T* gamma,
                        const BatchStatistics& stats, const T* dy, T* dx, T* dgamma, T* dbeta);

template <class T>
void relu_forward(ThreadPool& pool, int64_t count, const T* x, T* y);
template <class T>
void relu_backward(ThreadPool& pool, int64_t count, const T* x, const T* dy, T* dx);

// 2x2 windows, stride 2; `d` is the input's shape. The gradient goes to the first maximum of each
// window in row-major order.
template <class T>
void maxpool2d_forward(ThreadPool& pool, const Dims& d, const T* x, T* y);
template <class T>
void maxpool2d_backward(ThreadPool& pool, const Dims& d, const T* x, const T* dy, T* dx);

// Nearest neighbour, factor 2; `d` is the input's shape.
template <class T>
void upsample_forward(ThreadPool& pool, const Dims& d, const T* x, T* y);
template <class T>
void upsample_backward(ThreadPool& pool, const Dims& d, const T* dy, T* dx);

// y = inputs[0] + inputs[1] + ..., summed in that order.
template <class T>
void add_forward(ThreadPool& pool, int64_t count, const std::vector<const T*>& inputs, T* y);
// Every input receives dy; null entries are skipped.
template <class T>
void add_backward(ThreadPool& pool, int64_t count, const T* dy, const std::vector<T*>& dinputs);

// weight * mean((y - target)^2), summed in double.
template <class T>
double mse_loss_forward(int64_t count, const T* y, const T* target, double weight);
// The gradient of that loss with respect to y (the loss's own gradient is 1).
template <class T>
void mse_loss_backward(ThreadPool& pool, int64_t count, const T* y, const T* target, double weight,
                       T* dy);

}  // namespace hb_reference
