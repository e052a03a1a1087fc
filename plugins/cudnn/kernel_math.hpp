// The arithmetic of the backend's own kernels, one element at a time, shared by the CUDA kernels
// and the CPU tests so that both check the same code.
#pragma once

#include "hb/plugin.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define HB_HD __host__ __device__
#else
#define HB_HD
#endif

namespace hb_cudnn {
namespace math {

HB_HD inline float square_root(float x) {
#ifdef __CUDA_ARCH__
    return sqrtf(x);
#else
    return std::sqrt(x);
#endif
}
HB_HD inline double square_root(double x) {
#ifdef __CUDA_ARCH__
    return ::sqrt(x);
#else
    return std::sqrt(x);
#endif
}

// bfloat16 (the upper half of a float32) as stored in bf16 math: activations and their gradients.
struct bf16 {
    uint16_t bits;
};

HB_HD inline uint32_t float_bits(float x) {
#ifdef __CUDA_ARCH__
    return __float_as_uint(x);
#else
    uint32_t u;
    std::memcpy(&u, &x, sizeof u);
    return u;
#endif
}
HB_HD inline float bits_float(uint32_t u) {
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float x;
    std::memcpy(&x, &u, sizeof x);
    return x;
#endif
}

// Round to nearest, ties to even; a NaN stays a (quiet) NaN, overflow becomes infinity.
HB_HD inline bf16 to_bf16(float x) {
    const uint32_t u = float_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return {static_cast<uint16_t>((u >> 16) | 0x40u)};
    return {static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16)};
}
HB_HD inline float from_bf16(bf16 x) {
    return bits_float(uint32_t(x.bits) << 16);
}

// Element access for kernels written once for float and bf16 storage; arithmetic is float.
HB_HD inline float load(float x) {
    return x;
}
HB_HD inline float load(bf16 x) {
    return from_bf16(x);
}
HB_HD inline void store(float& destination, float x) {
    destination = x;
}
HB_HD inline void store(bf16& destination, float x) {
    destination = to_bf16(x);
}

struct RmsPropParams {
    float learning_rate = 0, alpha = 0, eps = 0, momentum = 0, weight_decay = 0;
    bool torch = true;  // eps outside the square root (torch) or inside (tensorflow)
};

inline RmsPropParams rmsprop_params(const hb_optimizer& o) {
    RmsPropParams p;
    p.learning_rate = o.learning_rate;
    p.alpha = o.alpha;
    p.eps = o.eps;
    p.momentum = o.momentum;
    p.weight_decay = o.weight_decay;
    p.torch = o.variant == HB_RMSPROP_TORCH;
    return p;
}

// One RMSProp step of one parameter; `buffer` (the momentum buffer) is used only with momentum.
HB_HD inline void rmsprop_element(const RmsPropParams& p, float& param, float grad,
                                  float& square_average, float& buffer) {
    const float g = p.weight_decay != 0.0f ? grad + p.weight_decay * param : grad;
    const float v = p.alpha * square_average + (1.0f - p.alpha) * (g * g);
    square_average = v;
    const float denominator = p.torch ? square_root(v) + p.eps : square_root(v + p.eps);
    if (p.momentum == 0.0f) {
        param -= p.learning_rate * (g / denominator);
    } else if (p.torch) {
        buffer = p.momentum * buffer + g / denominator;
        param -= p.learning_rate * buffer;
    } else {
        buffer = p.momentum * buffer + p.learning_rate * g / denominator;
        param -= buffer;
    }
}

// d/dy of weight * mean((y - t)^2) over `count` elements is scale * (y - t), scale = 2 w / count.
inline float mse_gradient_scale(double weight, double count) {
    return static_cast<float>(2.0 * weight / count);
}
HB_HD inline float mse_gradient(float y, float target, float scale) {
    return scale * (y - target);
}
HB_HD inline double squared_difference(float y, float target) {
    const double d = double(y) - double(target);
    return d * d;
}

// The window of a 2x2 max pool in row-major order: top-left, top-right, bottom-left,
// bottom-right. Returns the position (0..3) of the first maximum, which receives the gradient.
HB_HD inline int first_max_position(float a, float b, float c, float d) {
    int arg = 0;
    float m = a;
    if (b > m) arg = 1, m = b;
    if (c > m) arg = 2, m = c;
    if (d > m) arg = 3, m = d;
    return arg;
}
HB_HD inline float window_max(float a, float b, float c, float d) {
    float m = a;
    if (b > m) m = b;
    if (c > m) m = c;
    if (d > m) m = d;
    return m;
}

// The gradient of one nearest-upsampled input: its 2x2 block summed in row-major order.
HB_HD inline float upsample_gradient(float top_left, float top_right, float bottom_left,
                                     float bottom_right) {
    return top_left + top_right + bottom_left + bottom_right;
}

HB_HD inline float relu(float x) {
    return x > 0.0f ? x : 0.0f;
}
// The ReLU's gradient from its output: y > 0 exactly where x > 0.
HB_HD inline float relu_gradient(float y, float dy) {
    return y > 0.0f ? dy : 0.0f;
}

// Batch normalisation in training mode (docs/design.md §4), as the backend's own kernels compute it
// in bf16 math: per-channel sums over N, H, W in double, everything per channel from those sums,
// and one float expression per element.
struct BatchNormForward {
    float mean, inverse_deviation;  // kept for the backward pass
    float scale, shift;             // y = x * scale + shift, then the ReLU when fused
    float running_mean, running_var;
};
// `sum` and `squares` are the sums of x and x^2 over `count` elements of one channel.
HB_HD inline BatchNormForward batchnorm_forward_channel(double sum, double squares, double count,
                                                        float gamma, float beta, float running_mean,
                                                        float running_var, double momentum,
                                                        double eps) {
    const double mean = sum / count;
    double variance = squares / count - mean * mean;  // biased: it normalises
    if (variance < 0) variance = 0;
    const double inverse_deviation = 1.0 / square_root(variance + eps);
    const double scale = double(gamma) * inverse_deviation;
    const double unbiased = count > 1 ? variance * count / (count - 1) : variance;
    BatchNormForward r;
    r.mean = float(mean);
    r.inverse_deviation = float(inverse_deviation);
    r.scale = float(scale);
    r.shift = float(double(beta) - mean * scale);
    r.running_mean = float((1 - momentum) * double(running_mean) + momentum * mean);
    r.running_var = float((1 - momentum) * double(running_var) + momentum * unbiased);
    return r;
}
HB_HD inline float batchnorm_forward_element(float x, float scale, float shift, bool fused_relu) {
    const float y = x * scale + shift;
    return fused_relu ? relu(y) : y;
}

// The gradient that reaches the batch norm's output: through the fused ReLU when there is one
// (`y` is then the ReLU's output).
HB_HD inline float batchnorm_output_gradient(float dy, float y, bool fused_relu) {
    return fused_relu ? relu_gradient(y, dy) : dy;
}
HB_HD inline float normalized(float x, float mean, float inverse_deviation) {
    return (x - mean) * inverse_deviation;
}
struct BatchNormBackward {
    float dgamma, dbeta;
    // dx = input_scale * (g - mean_g - x_hat * mean_g_x_hat)
    float input_scale, mean_g, mean_g_x_hat;
};
// `sum_g` and `sum_g_x_hat` are the sums of g and g * x_hat over `count` elements of one
// channel, g being the output gradient after the fused ReLU.
HB_HD inline BatchNormBackward batchnorm_backward_channel(double sum_g, double sum_g_x_hat,
                                                          double count, float gamma,
                                                          float inverse_deviation) {
    BatchNormBackward r;
    r.dgamma = float(sum_g_x_hat);
    r.dbeta = float(sum_g);
    r.input_scale = float(double(gamma) * double(inverse_deviation));
    r.mean_g = float(sum_g / count);
    r.mean_g_x_hat = float(sum_g_x_hat / count);
    return r;
}
HB_HD inline float batchnorm_input_gradient(float g, float x_hat, float input_scale, float mean_g,
                                            float mean_g_x_hat) {
    return input_scale * (g - mean_g - x_hat * mean_g_x_hat);
}

}  // namespace math
}  // namespace hb_cudnn
