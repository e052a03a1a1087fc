// hb::rmsprop_update (include/hb/rmsprop.hpp): each variant, with and without momentum and weight
// decay, against its formula written out for two steps of one element.
#include "hb/rmsprop.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace {

struct Case {
    hb_rmsprop_variant variant;
    float momentum, weight_decay;
};

// Two updates of p = 0.5 from the gradients 0.3 and -0.2, as the header's formulas say.
double expected_after_two_steps(const hb_optimizer& o) {
    double p = 0.5, v = o.initial_square_average, b = 0;
    for (double grad : {0.3, -0.2}) {
        const double g = grad + o.weight_decay * p;
        v = o.alpha * v + (1 - o.alpha) * g * g;
        const double d =
            o.variant == HB_RMSPROP_TORCH ? std::sqrt(v) + o.eps : std::sqrt(v + o.eps);
        if (o.momentum == 0) {
            p -= o.learning_rate * g / d;
        } else if (o.variant == HB_RMSPROP_TORCH) {
            b = o.momentum * b + g / d;
            p -= o.learning_rate * b;
        } else {
            b = o.momentum * b + o.learning_rate * g / d;
            p -= b;
        }
    }
    return p;
}

TEST(RmsProp, EachVariantFollowsItsFormula) {
    for (const Case c : {Case{HB_RMSPROP_TORCH, 0, 0}, Case{HB_RMSPROP_TORCH, 0.9f, 0.05f},
                         Case{HB_RMSPROP_TENSORFLOW, 0, 0}, Case{HB_RMSPROP_TENSORFLOW, 0.9f, 0},
                         Case{HB_RMSPROP_TENSORFLOW, 0, 0.05f}}) {
        hb_optimizer o{};
        o.variant = c.variant;
        o.learning_rate = 0.01f;
        o.alpha = 0.9f;
        o.eps = 1e-3f;
        o.momentum = c.momentum;
        o.weight_decay = c.weight_decay;
        o.initial_square_average = c.variant == HB_RMSPROP_TENSORFLOW ? 1.0f : 0.0f;
        double p[3] = {0.5, 0.5, 0.5}, v[3], b[3] = {};
        for (double& x : v) x = o.initial_square_average;
        const double steps[2][3] = {{0.3, 0.3, 0.3}, {-0.2, -0.2, -0.2}};
        for (const auto& g : steps) hb::rmsprop_update(o, 1, 3, p, g, v, b);
        SCOPED_TRACE(testing::Message() << "variant " << c.variant << ", momentum " << c.momentum
                                        << ", weight decay " << c.weight_decay);
        EXPECT_EQ(p[0], 0.5);  // outside the range
        EXPECT_NEAR(p[1], expected_after_two_steps(o), 1e-12);
        EXPECT_EQ(p[1], p[2]);
        EXPECT_NE(p[1], 0.5);
    }
}

}  // namespace
