// RMSProp's update of host buffers, both variants, with momentum and weight decay, as
// hb_optimizer states them (plugin.h). A CPU backend calls it on ranges of a tensor's elements,
// from as many threads as it splits the tensor across. Header-only, standard library only.
#pragma once

#include "hb/plugin.h"

#include <cmath>
#include <cstdint>

// With OpenMP, each range's loop is vectorised whatever the math library's errno handling.
#if defined(_OPENMP)
#define HB_SIMD_LOOP _Pragma("omp simd")
#else
#define HB_SIMD_LOOP
#endif

namespace hb {
namespace detail {

// The variant fixed at compile time, so that every form vectorises.
template <class T, bool Torch, bool Momentum, bool Decay>
void rmsprop_range(const hb_optimizer& o, int64_t begin, int64_t end, T* param, const T* grad, T* v,
                   T* buffer) {
    const T lr = static_cast<T>(o.learning_rate), alpha = static_cast<T>(o.alpha);
    const T eps = static_cast<T>(o.eps), momentum = static_cast<T>(o.momentum);
    const T decay = static_cast<T>(o.weight_decay);
    HB_SIMD_LOOP
    for (int64_t i = begin; i < end; ++i) {
        const T g = Decay ? grad[i] + decay * param[i] : grad[i];
        v[i] = alpha * v[i] + (T(1) - alpha) * (g * g);
        const T denominator = Torch ? std::sqrt(v[i]) + eps : std::sqrt(v[i] + eps);
        if (!Momentum) {
            param[i] -= lr * (g / denominator);
        } else if (Torch) {
            buffer[i] = momentum * buffer[i] + g / denominator;
            param[i] -= lr * buffer[i];
        } else {
            buffer[i] = momentum * buffer[i] + lr * g / denominator;
            param[i] -= buffer[i];
        }
    }
}

template <class T, bool Torch, bool Momentum>
void rmsprop_range(const hb_optimizer& o, int64_t begin, int64_t end, T* param, const T* grad, T* v,
                   T* buffer) {
    if (o.weight_decay != 0)
        rmsprop_range<T, Torch, Momentum, true>(o, begin, end, param, grad, v, buffer);
    else
        rmsprop_range<T, Torch, Momentum, false>(o, begin, end, param, grad, v, buffer);
}

}  // namespace detail

// Elements [begin, end) of one trainable tensor, updated once from their gradient:
//   g = grad + weight_decay * p;   v = alpha * v + (1 - alpha) * g^2
//   torch:      p -= lr * g / (sqrt(v) + eps)
//               with momentum m: b = m * b + g / (sqrt(v) + eps);   p -= lr * b
//   tensorflow: p -= lr * g / sqrt(v + eps)
//               with momentum m: b = m * b + lr * g / sqrt(v + eps);   p -= b
// `v` (the square average) starts at hb_optimizer.initial_square_average and `buffer` (read
// only with momentum; may be null without) at 0.
template <class T>
void rmsprop_update(const hb_optimizer& o, int64_t begin, int64_t end, T* param, const T* grad,
                    T* v, T* buffer) {
    const bool torch = o.variant == HB_RMSPROP_TORCH, momentum = o.momentum != 0;
    if (torch && momentum)
        detail::rmsprop_range<T, true, true>(o, begin, end, param, grad, v, buffer);
    else if (torch)
        detail::rmsprop_range<T, true, false>(o, begin, end, param, grad, v, buffer);
    else if (momentum)
        detail::rmsprop_range<T, false, true>(o, begin, end, param, grad, v, buffer);
    else
        detail::rmsprop_range<T, false, false>(o, begin, end, param, grad, v, buffer);
}

}  // namespace hb
