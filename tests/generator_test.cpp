#include "data/generator.hpp"
#include "data/initial_state.hpp"
#include "model/hourglass.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace harness::data;
using harness::model::build_hourglass;
using harness::model::HourglassSpec;
using harness::model::LayerKind;

namespace {

HourglassSpec small_spec() {
    HourglassSpec s;
    s.stacks = 2;
    s.features = 16;
    s.depth = 2;
    s.joints = 4;
    s.input_size = 32;
    s.batch = 2;
    return s;
}

bool same_bytes(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() &&
           (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

}  // namespace

// The known-answer vectors shipped with Random123 (kat_vectors, philox4x32 10 rounds).
TEST(Philox, KnownAnswers) {
    EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}),
              (PhiloxCounter{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
    EXPECT_EQ(
        philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
        (PhiloxCounter{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
    EXPECT_EQ(
        philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
        (PhiloxCounter{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Generator, KeyDerivation) {
    EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
    EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
    EXPECT_EQ(splitmix64(0), 0xe220a8397b1dcdafull);  // SplitMix64's first output from state 0
    const uint64_t h = fnv1a64("input.0") ^ splitmix64(1);
    EXPECT_EQ(stream_key(1, "input.0"),
              (PhiloxKey{static_cast<uint32_t>(h), static_cast<uint32_t>(h >> 32)}));
}

TEST(Generator, StreamLayout) {
    const PhiloxKey key = stream_key(7, "w");
    const PhiloxCounter block0 = philox4x32_10({0, 0, 0, 0}, key);
    const PhiloxCounter block1 = philox4x32_10({1, 0, 0, 0}, key);
    const PhiloxCounter far = philox4x32_10({5, 1, 0, 0}, key);
    for (uint64_t j = 0; j < 4; ++j) {
        EXPECT_EQ(random_bits(7, "w", j), block0[j]);
        EXPECT_EQ(random_bits(7, "w", 4 + j), block1[j]);
        EXPECT_EQ(random_bits(7, "w", ((uint64_t{1} << 32) + 5) * 4 + j), far[j]);
    }
}

TEST(Generator, UnitFloat) {
    EXPECT_EQ(unit_float(0), 0.0f);
    EXPECT_EQ(unit_float(0xff), 0.0f);
    EXPECT_EQ(unit_float(0x100), 0x1p-24f);
    EXPECT_EQ(unit_float(0x80000000u), 0.5f);
    EXPECT_EQ(unit_float(0xffffffffu), 1.0f - 0x1p-24f);
}

// The same values as the doc comment in generator.hpp.
TEST(Generator, PinnedValues) {
    EXPECT_EQ(random_bits(1, "input.0", 0), 0x78a760f9u);
    EXPECT_EQ(random_bits(1, "input.0", 1), 0x345808acu);
    EXPECT_EQ(random_bits(1, "input.0", 2), 0xe400cd6au);
    EXPECT_EQ(random_bits(1, "input.0", 3), 0xeaf16ef1u);
    EXPECT_EQ(uniform(1, "input.0", 4, 0.0f, 1.0f),
              (std::vector<float>{0x1.e29d8p-2f, 0x1.a2c04p-3f, 0x1.c8019ap-1f, 0x1.d5e2dcp-1f}));
}

TEST(Generator, Determinism) {
    const auto a = uniform(42, "stack0.out.weight", 1001, -0.5f, 0.5f);
    EXPECT_TRUE(same_bytes(a, uniform(42, "stack0.out.weight", 1001, -0.5f, 0.5f)));
    EXPECT_FALSE(same_bytes(a, uniform(43, "stack0.out.weight", 1001, -0.5f, 0.5f)));
    EXPECT_FALSE(same_bytes(a, uniform(42, "stack0.out.bias", 1001, -0.5f, 0.5f)));
    // A shorter draw is a prefix of a longer one, whatever the block boundary.
    for (int64_t n : {0, 1, 3, 5, 8, 999}) {
        const auto b = uniform(42, "stack0.out.weight", n, -0.5f, 0.5f);
        EXPECT_TRUE(same_bytes(b, std::vector<float>(a.begin(), a.begin() + n))) << n;
    }
}

TEST(Generator, UniformFollowsTheStream) {
    const auto u = uniform(3, "x", 9, -2.0f, 6.0f);
    for (size_t k = 0; k < u.size(); ++k) {
        const float scaled = 8.0f * unit_float(random_bits(3, "x", k));
        EXPECT_EQ(u[k], -2.0f + scaled);
        EXPECT_GE(u[k], -2.0f);
        EXPECT_LT(u[k], 6.0f);
    }
    EXPECT_THROW(uniform(3, "x", -1, 0.0f, 1.0f), std::invalid_argument);
}

TEST(InitialState, FollowsTheGraph) {
    const auto g = build_hourglass(small_spec());
    const auto state = initial_state(g, 5);
    ASSERT_EQ(state.size(), g.tensors.size());
    for (size_t i = 0; i < g.tensors.size(); ++i) {
        const auto& t = g.tensors[i];
        const auto& l = g.layers[static_cast<size_t>(t.layer)];
        ASSERT_EQ(static_cast<int64_t>(state[i].size()), t.elements()) << t.name;
        if (l.kind == LayerKind::conv2d) {
            const auto bound =
                static_cast<float>(1.0 / std::sqrt(double(l.in_channels) * l.kernel * l.kernel));
            EXPECT_TRUE(same_bytes(state[i], uniform(5, t.name, t.elements(), -bound, bound)))
                << t.name;
            for (float v : state[i]) ASSERT_LE(std::fabs(v), bound) << t.name;
        } else {
            const float expected = t.role == harness::model::TensorRole::weight ||
                                           t.role == harness::model::TensorRole::running_var
                                       ? 1.0f
                                       : 0.0f;
            for (float v : state[i]) ASSERT_EQ(v, expected) << t.name;
        }
    }
    EXPECT_TRUE(same_bytes(state[0], initial_state(g, 5)[0]));
    EXPECT_FALSE(same_bytes(state[0], initial_state(g, 6)[0]));
}

TEST(InitialState, StemBound) {
    const auto g = build_hourglass(small_spec());
    const auto state = initial_state(g, 5);
    const float bound = static_cast<float>(1.0 / std::sqrt(3.0 * 7 * 7));  // fan_in = Cin k^2
    float largest = 0.0f;
    for (float v : state[0]) largest = std::max(largest, std::fabs(v));
    EXPECT_LE(largest, bound);
    EXPECT_GT(largest, 0.9f * bound);
}

TEST(Batches, NamedStreams) {
    const auto g = build_hourglass(small_spec());
    const Batches b = make_batches(g, 9, 3);
    ASSERT_EQ(b.inputs.size(), 3u);
    ASSERT_EQ(b.targets.size(), 3u);
    EXPECT_EQ(b.inputs[0].size(), 2u * 3 * 32 * 32);
    EXPECT_EQ(b.targets[2].size(), 2u * 4 * 8 * 8);
    EXPECT_TRUE(same_bytes(b.inputs[1], uniform(9, "input.1", 2 * 3 * 32 * 32, 0.0f, 1.0f)));
    EXPECT_TRUE(same_bytes(b.targets[2], uniform(9, "target.2", 2 * 4 * 8 * 8, 0.0f, 1.0f)));
    EXPECT_FALSE(same_bytes(b.inputs[0], b.inputs[1]));
    EXPECT_THROW(make_batches(g, 9, 0), std::invalid_argument);
}

TEST(Batches, InputBlocksRepeatOneDrawPerBlock) {
    const auto g = build_hourglass(small_spec());  // 2 x 3 x 32 x 32
    const Batches b = make_batches(g, 9, 2, 16);
    const std::vector<float> draws = uniform(9, "input.1", 2 * 3 * 2 * 2, 0.0f, 1.0f);
    ASSERT_EQ(b.inputs[1].size(), 2u * 3 * 32 * 32);
    // Image 1, channel 2, pixel (17, 5): block (1, 0) of plane 5.
    EXPECT_EQ(b.inputs[1][((1 * 3 + 2) * 32 + 17) * 32 + 5], draws[(5 * 2 + 1) * 2 + 0]);
    EXPECT_EQ(b.inputs[1][0], b.inputs[1][15 * 32 + 15]);
    EXPECT_NE(b.inputs[1][0], b.inputs[1][16]);
    EXPECT_TRUE(same_bytes(b.targets[1], make_batches(g, 9, 2).targets[1]));
    EXPECT_THROW(make_batches(g, 9, 1, 5), std::invalid_argument);
}
