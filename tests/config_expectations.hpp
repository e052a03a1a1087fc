// What the config tests share: the seed's optimizer, a backend entry's names.
#pragma once

#include "config/config.hpp"
#include "hb/plugin.h"

#include <gtest/gtest.h>

#include <string>

namespace harness::testing {

inline void expect_rmsprop_torch(const hb_optimizer& o) {
    EXPECT_EQ(o.variant, HB_RMSPROP_TORCH);
    EXPECT_FLOAT_EQ(o.learning_rate, 2.5e-4f);
    EXPECT_FLOAT_EQ(o.alpha, 0.99f);
    EXPECT_FLOAT_EQ(o.eps, 1e-8f);
    EXPECT_EQ(o.momentum, 0.0f);
    EXPECT_EQ(o.weight_decay, 0.0f);
    EXPECT_EQ(o.initial_square_average, 0.0f);
}

inline void expect_backend(const config::BackendEntry& b, const std::string& name,
                           const std::string& plugin, const std::string& device) {
    EXPECT_EQ(b.name, name);
    EXPECT_EQ(b.plugin, plugin);
    EXPECT_EQ(b.device, device);
}

}  // namespace harness::testing
