#include "optimizer.hpp"

#include "hb/rmsprop.hpp"

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
    T* v = state.square_average.data();
    T* buffer = state.momentum_buffer.data();
    parallel_for(pool, count, 1 << 15, [&](int64_t i0, int64_t i1) {
        hb::rmsprop_update(settings, i0, i1, param, grad, v, buffer);
    });
}

template RmsPropState<float> make_rmsprop_state<float>(const hb_optimizer&, int64_t);
template RmsPropState<double> make_rmsprop_state<double>(const hb_optimizer&, int64_t);
template void rmsprop_update<float>(ThreadPool&, const hb_optimizer&, int64_t, float*, const float*,
                                    RmsPropState<float>&);
template void rmsprop_update<double>(ThreadPool&, const hb_optimizer&, int64_t, double*,
                                     const double*, RmsPropState<double>&);

}  // namespace reference
