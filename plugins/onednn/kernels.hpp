// The parts of the training step oneDNN has no primitive for, as vectorised OpenMP loops over
// whole buffers: the MSE loss, gradient accumulation, the RMSProp update and the batch-norm
// running statistics; and the memory-bound 2x2 pooling and upsampling loops, which oneDNN 2.6
// runs at a fraction of the memory bandwidth on AVX2. `mask` (may be null) marks the floats of a
// blocked buffer that hold elements; the others are channel padding and stay zero.
#pragma once

#include "hb/plugin.h"

#include <cstdint>

namespace hb_onednn {

// sum((y - t)^2) over the masked floats, accumulated in double.
double squared_error(int64_t count, const float* y, const float* target, const uint8_t* mask,
                     int threads);

// dy = scale * (y - t), or dy += ... when `accumulate`; zero in padding.
void squared_error_gradient(int64_t count, const float* y, const float* target, const uint8_t* mask,
                            float scale, float* dy, bool accumulate, int threads);

void add_into(int64_t count, float* dst, const float* src, int threads);
void copy(int64_t count, float* dst, const float* src, int threads);

// hb::rmsprop_update (include/hb/rmsprop.hpp) over `count` parameters, in chunks across
// `threads`. `momentum_buffer` is used only with momentum.
void rmsprop_update(const hb_optimizer& settings, int64_t count, float* param, const float* grad,
                    float* square_average, float* momentum_buffer, int threads);

// Per-channel mean and biased variance of an activation in NCHW (block 1) or nChw<block>c
// (block 8 or 16), accumulated in double: oneDNN's float32 sums drift on large planes.
void batch_statistics(int64_t batch, int64_t channels, int64_t plane, int block, const float* x,
                      float* mean, float* variance, int threads);

// r = (1 - m) r + m * batch statistic, the variance made unbiased over `count` values.
void update_running_statistics(int64_t channels, const float* mean, const float* variance,
                               double momentum, double count, float* running_mean,
                               float* running_var);

// The 2x2 pooling and 2x upsampling loops work on an activation in NCHW (block 1) or
// nChw<block>c, as `planes` = batch * ceil(channels / block) planes of h x w pixels of `block`
// floats; h and w are the larger image's (the pooling input, the upsampling output), both even.

// y = the maximum of each 2x2 window; argmax = which of its four inputs (0..3 in row-major order,
// the first of equal maxima) it came from.
void max_pool_2x2_forward(int64_t planes, int64_t h, int64_t w, int block, const float* x, float* y,
                          uint8_t* argmax, int threads);

// dx = dy at the position each window's maximum came from, 0 at the three others.
void max_pool_2x2_backward(int64_t planes, int64_t h, int64_t w, int block, const float* dy,
                           const uint8_t* argmax, float* dx, int threads);

// Nearest-neighbour 2x upsampling backward: dx = the sum of dy over each 2x2 block.
void upsample_2x_backward(int64_t planes, int64_t h, int64_t w, int block, const float* dy,
                          float* dx, int threads);

}  // namespace hb_onednn
