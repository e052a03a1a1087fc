// RMSProp (docs/design.md §4) in its Torch and TensorFlow variants, with optional weight decay and
// momentum.
#pragma once

#include "hb/plugin.h"
#include "thread_pool.hpp"

#include <cstdint>
#include <vector>

namespace reference {

// Optimizer state of one trainable tensor.
template <class T>
struct RmsPropState {
    std::vector<T> square_average;
    std::vector<T> momentum_buffer;  // empty without momentum
};

template <class T>
RmsPropState<T> make_rmsprop_state(const hb_optimizer& settings, int64_t elements);

// One update of `count` parameters from their gradients: hb::rmsprop_update
// (include/hb/rmsprop.hpp) on ranges of them across the pool.
template <class T>
void rmsprop_update(ThreadPool& pool, const hb_optimizer& settings, int64_t count, T* param,
                    const T* grad, RmsPropState<T>& state);

}  // namespace reference
