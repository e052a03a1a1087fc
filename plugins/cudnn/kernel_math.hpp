// The arithmetic of the backend's own kernels, one element at a time, shared by the CUDA kernels
// and the CPU tests so that both check the same code.
#pragma once

#include <cmath>

#ifdef __CUDACC__
#define HB_HD __host__ __device__
#else
#define HB_HD
#endif

namespace cudnn_backend {
namespace math {

HB_HD inline float square_root(float x) {
#ifdef __CUDA_ARCH__
    return sqrtf(x);
#else
    return std::sqrt(x);
#endif
}

struct RmsPropParams {
    float learning_rate = 0, alpha = 0, eps = 0, momentum = 0, weight_decay = 0;
    bool torch = true;  // eps outside the square root (torch) or inside (tensorflow)
};

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

}  // namespace math
}  // namespace cudnn_backend
