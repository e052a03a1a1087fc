// The weights `harness check` measures rounding noise from: one ulp away, at a chosen precision.
#include "data/perturbation.hpp"
#include "model/hourglass.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace {

using harness::data::perturb_by_one_ulp;

harness::model::Graph small_graph() {
    harness::model::HourglassSpec spec;
    spec.stacks = 1;
    spec.features = 16;
    spec.depth = 1;
    spec.joints = 2;
    spec.input_size = 32;
    spec.batch = 1;
    return harness::model::build_hourglass(spec);
}

TEST(Perturbation, MovesEveryNonZeroTrainableElementByOneUlpOfTheFormat) {
    const harness::model::Graph graph = small_graph();
    const auto original = harness::data::initial_state(graph, 4);
    for (int bits : {24, 11, 8}) {
        auto moved = original;
        perturb_by_one_ulp(graph, 4, moved, bits);
        int up = 0, down = 0;
        for (size_t t = 0; t < graph.tensors.size(); ++t)
            for (size_t i = 0; i < original[t].size(); ++i) {
                const float x = original[t][i], y = moved[t][i];
                if (!graph.tensors[t].trainable() || x == 0.0f) {
                    EXPECT_EQ(y, x) << graph.tensors[t].name;
                    continue;
                }
                // One step of the format's spacing, which halves below a power of two.
                int exponent = 0;
                const bool power_of_two = std::fabs(std::frexp(x, &exponent)) == 0.5f;
                if (power_of_two && std::fabs(y) < std::fabs(x)) --exponent;
                // Exact, but where the step crosses into the next binade and loses x's last bit.
                const float ulp = std::ldexp(1.0f, exponent - bits);
                EXPECT_NEAR(std::fabs(y - x), ulp, bits == 24 ? 0.0f : std::ldexp(ulp, 11 - 24))
                    << graph.tensors[t].name << "[" << i << "], " << bits << " bits";
                (y > x ? up : down)++;
            }
        EXPECT_GT(up, 100) << bits;  // both directions, from the random stream
        EXPECT_GT(down, 100) << bits;
        if (bits == 24) {
            auto again = original;
            perturb_by_one_ulp(graph, 4, again);  // float32's own ulp is the default
            EXPECT_EQ(again, moved);
        }
    }
}

TEST(Perturbation, RefusesFormatsItCannotRepresent) {
    const harness::model::Graph graph = small_graph();
    auto state = harness::data::initial_state(graph, 4);
    EXPECT_THROW(perturb_by_one_ulp(graph, 4, state, 25), std::invalid_argument);
    EXPECT_THROW(perturb_by_one_ulp(graph, 4, state, 1), std::invalid_argument);
}

}  // namespace
