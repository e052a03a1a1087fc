#include "optimizer.hpp"

#include <cmath>

namespace reference {

template <class T>
RmsPropState<T> make_rmsprop_state(const hb_optimizer& settings, int64_t elements) {
    RmsPropState<T> state;
    state.square_average.assign(static_cast<size_t>(elements),
                                static_cast<T>(settings.initial_square_average));
    if (settings.momentum != 0) state.momentum_buffer.assign(static_cast<size_t>(elements), T(0));
    return state;
}

template <class T>
void rmsprop_update(ThreadPool& pool, const hb_optimizer& settings, int64_t count, T* param,
                    const T* grad, RmsPropState<T>& state) {
    const T lr = static_cast<T>(settings.learning_rate);
    const T alpha = static_cast<T>(settings.alpha);
    const T eps = static_cast<T>(settings.eps);
    const T momentum = static_cast<T>(settings.momentum);
    const T decay = static_cast<T>(settings.weight_decay);
    const bool torch = settings.variant == HB_RMSPROP_TORCH;
    T* v = state.square_average.data();
    T* buffer = state.momentum_buffer.data();
    parallel_for(pool, count, 1 << 15, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) {
            const T g = decay != T(0) ? grad[i] + decay * param[i] : grad[i];
            v[i] = alpha * v[i] + (T(1) - alpha) * (g * g);
            const T denominator = torch ? std::sqrt(v[i]) + eps : std::sqrt(v[i] + eps);
            if (momentum == T(0)) {
                param[i] -= lr * (g / denominator);
            } else if (torch) {
                buffer[i] = momentum * buffer[i] + g / denominator;
                param[i] -= lr * buffer[i];
            } else {
                buffer[i] = momentum * buffer[i] + lr * g / denominator;
                param[i] -= buffer[i];
            }
        }
    });
}

template RmsPropState<float> make_rmsprop_state<float>(const hb_optimizer&, int64_t);
template RmsPropState<double> make_rmsprop_state<double>(const hb_optimizer&, int64_t);
template void rmsprop_update<float>(ThreadPool&, const hb_optimizer&, int64_t, float*, const float*,
                                    RmsPropState<float>&);
template void rmsprop_update<double>(ThreadPool&, const hb_optimizer&, int64_t, double*,
                                     const double*, RmsPropState<double>&);

}  // namespace reference
