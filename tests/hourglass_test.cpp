// The stacked hourglass as a layer graph: its layers, names, tensors and shapes, and its
// parameter and FLOP counts against a hand calculation.
#include "model/hourglass.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

using harness::model::AbiGraph;
using harness::model::build_hourglass;
using harness::model::Graph;
using harness::model::HourglassSpec;
using harness::model::LayerKind;
using harness::model::LossReduction;
using harness::model::Shape;
using harness::model::TensorRole;

namespace {

HourglassSpec spec_with_stacks(int stacks) {
    HourglassSpec s;
    s.stacks = stacks;
    return s;
}

const Shape& value_shape(const Graph& g, const std::string& layer) {
    return g.values[static_cast<size_t>(g.layer(layer).output)].shape;
}

bool has_layer(const Graph& g, const std::string& name) {
    return g.index_of_layer(name) >= 0;
}

// ---- Independent closed-form counts for F = 256, J = 16, depth 4, 256 x 256 input, bias on.

constexpr int64_t F = 256, J = 16;

// conv k x k, cin -> cout, with bias
constexpr int64_t conv_params(int64_t cin, int64_t cout, int64_t k) {
    return cin * cout * k * k + cout;
}
// Residual(cin, c): BN(cin) + conv1x1(cin, c/2) + BN(c/2) + conv3x3(c/2, c/2) + BN(c/2)
// + conv1x1(c/2, c) [+ skip conv1x1(cin, c)]; a BN has 2 trainable vectors (gamma, beta).
constexpr int64_t residual_params(int64_t cin, int64_t c) {
    return 2 * cin + conv_params(cin, c / 2, 1) + 2 * (c / 2) + conv_params(c / 2, c / 2, 3) +
           2 * (c / 2) + conv_params(c / 2, c, 1) + (cin != c ? conv_params(cin, c, 1) : 0);
}
// Hourglass(n) holds up1, low1, low3 at each of its n levels plus the innermost low2: 3n + 1.
constexpr int64_t residuals_per_hourglass = 3 * 4 + 1;
// Stem: conv7x7(3 -> 64) + BN(64) + Residual(64,128) + Residual(128,128) + Residual(128,F).
constexpr int64_t stem_params = conv_params(3, 64, 7) + 2 * 64 + residual_params(64, 128) +
                                residual_params(128, 128) + residual_params(128, F);
// Stack: hourglass + res (all Residual(F,F)), lin conv1x1 + lin_bn, out conv1x1(F -> J).
constexpr int64_t stack_params = (residuals_per_hourglass + 1) * residual_params(F, F) +
                                 conv_params(F, F, 1) + 2 * F + conv_params(F, J, 1);
// Between stacks: merge_features conv1x1(F -> F) and merge_heatmaps conv1x1(J -> F).
constexpr int64_t merge_params = conv_params(F, F, 1) + conv_params(J, F, 1);
constexpr int64_t expected_params(int64_t stacks) {
    return stem_params + stacks * stack_params + (stacks - 1) * merge_params;
}

// FLOPs per image on an s x s map (e = s^2 elements per channel): conv 2 cin k^2 cout e + cout e
// (bias); BN 2, ReLU 1 per element; maxpool 3 per output; add n - 1 per output; mse 3 per element.
constexpr int64_t conv_flops(int64_t cin, int64_t cout, int64_t k, int64_t s) {
    return 2 * cin * k * k * cout * s * s + cout * s * s;
}
constexpr int64_t bn_relu_flops(int64_t c, int64_t s) {
    return 3 * c * s * s;
}
constexpr int64_t residual_flops(int64_t cin, int64_t c, int64_t s) {
    return bn_relu_flops(cin, s) + conv_flops(cin, c / 2, 1, s) + bn_relu_flops(c / 2, s) +
           conv_flops(c / 2, c / 2, 3, s) + bn_relu_flops(c / 2, s) + conv_flops(c / 2, c, 1, s) +
           (cin != c ? conv_flops(cin, c, 1, s) : 0) + c * s * s;  // + the add
}
// Level l of Hourglass(4) on a 64 x 64 map works at s = 64 / 2^l: up1 and the final add at s,
// pool output, low1 and low3 at s / 2; the innermost low2 Residual runs at 64 / 2^4 = 4.
constexpr int64_t hourglass_level_flops(int64_t s) {
    return residual_flops(F, F, s) + 3 * F * (s / 2) * (s / 2) + 2 * residual_flops(F, F, s / 2) +
           F * s * s;
}
constexpr int64_t hourglass_flops = hourglass_level_flops(64) + hourglass_level_flops(32) +
                                    hourglass_level_flops(16) + hourglass_level_flops(8) +
                                    residual_flops(F, F, 4);
// Stem: conv7x7/2 to 128 x 128, BN + ReLU, Residual(64,128) at 128, pool to 64, two Residuals.
constexpr int64_t stem_flops = conv_flops(3, 64, 7, 128) + bn_relu_flops(64, 128) +
                               residual_flops(64, 128, 128) + 3 * 128 * 64 * 64 +
                               residual_flops(128, 128, 64) + residual_flops(128, F, 64);
constexpr int64_t stack_flops = hourglass_flops + residual_flops(F, F, 64) +
                                conv_flops(F, F, 1, 64) + bn_relu_flops(F, 64) +
                                conv_flops(F, J, 1, 64) + 3 * J * 64 * 64;
constexpr int64_t merge_flops =
    conv_flops(F, F, 1, 64) + conv_flops(J, F, 1, 64) + 2 * F * 64 * 64;  // 3-input add
constexpr int64_t expected_forward_flops(int64_t stacks) {
    return stem_flops + stacks * stack_flops + (stacks - 1) * merge_flops;
}

}  // namespace

TEST(Hourglass, InputAndTargetShapes) {
    const Graph g = build_hourglass(HourglassSpec{});
    ASSERT_EQ(g.input, 0);
    EXPECT_EQ(g.values[0].name, "input");
    EXPECT_EQ(g.values[0].shape, (Shape{6, 3, 256, 256}));
    EXPECT_EQ(g.target_shape, (Shape{6, 16, 64, 64}));
    EXPECT_EQ(g.batch(), 6);
}

TEST(Hourglass, EveryLayerOutputIsANewValueNamedAfterIt) {
    const Graph g = build_hourglass(spec_with_stacks(2));
    ASSERT_EQ(g.values.size(), g.layers.size() + 1);
    std::set<std::string> names;
    for (size_t i = 0; i < g.layers.size(); ++i) {
        const auto& l = g.layers[i];
        EXPECT_EQ(l.output, static_cast<int>(i) + 1) << l.name;
        EXPECT_EQ(g.values[static_cast<size_t>(l.output)].name, l.name);
        EXPECT_TRUE(names.insert(l.name).second) << "duplicate layer " << l.name;
        for (int in : l.inputs) EXPECT_LT(in, l.output) << l.name << " reads a later value";
    }
}

TEST(Hourglass, StemAndStackLayerOrder) {
    const Graph g = build_hourglass(spec_with_stacks(2));
    const char* first[] = {"pre.conv",       "pre.bn",         "pre.relu",       "pre.res1.bn1",
                           "pre.res1.relu1", "pre.res1.conv1", "pre.res1.bn2",   "pre.res1.relu2",
                           "pre.res1.conv2", "pre.res1.bn3",   "pre.res1.relu3", "pre.res1.conv3",
                           "pre.res1.skip",  "pre.res1.add",   "pre.pool",       "pre.res2.bn1"};
    for (size_t i = 0; i < std::size(first); ++i) EXPECT_EQ(g.layers[i].name, first[i]);

    const int out = g.index_of_layer("stack0.out");
    EXPECT_EQ(g.layers[static_cast<size_t>(out) - 1].name, "stack0.lin_relu");
    EXPECT_EQ(g.layers[static_cast<size_t>(out) + 1].name, "stack0.loss");
    EXPECT_EQ(g.layers[static_cast<size_t>(out) + 2].name, "stack0.merge_features");
    EXPECT_EQ(g.layers[static_cast<size_t>(out) + 3].name, "stack0.merge_heatmaps");
    EXPECT_EQ(g.layers[static_cast<size_t>(out) + 4].name, "stack0.merge");
    EXPECT_EQ(g.layers[static_cast<size_t>(out) + 5].name, "stack1.hg.up1.bn1");
    EXPECT_EQ(g.layers.back().name, "stack1.loss");
    EXPECT_FALSE(has_layer(g, "stack1.merge"));

    const auto& add = g.layer("stack0.hg.add");
    ASSERT_EQ(add.inputs.size(), 2u);
    EXPECT_EQ(g.values[static_cast<size_t>(add.inputs[0])].name, "stack0.hg.up1.add");
    EXPECT_EQ(g.values[static_cast<size_t>(add.inputs[1])].name, "stack0.hg.upsample");
    EXPECT_EQ(g.values[static_cast<size_t>(g.layer("stack0.hg.upsample").inputs[0])].name,
              "stack0.hg.low3.add");
}

TEST(Hourglass, RecursiveNames) {
    const Graph g = build_hourglass(HourglassSpec{});
    EXPECT_TRUE(has_layer(g, "stack0.hg.low2.low2.up1.conv2"));
    EXPECT_TRUE(has_layer(g, "stack7.hg.low2.low2.low2.low2.conv3"));  // innermost Residual
    EXPECT_FALSE(has_layer(g, "stack0.hg.low2.low2.low2.low2.up1.conv1"));
    EXPECT_FALSE(has_layer(g, "stack8.hg.up1.conv1"));

    HourglassSpec shallow;
    shallow.depth = 2;
    shallow.input_size = 64;
    const Graph s = build_hourglass(shallow);
    EXPECT_FALSE(has_layer(s, "stack0.hg.low2.low2.up1.conv2"));
    EXPECT_TRUE(has_layer(s, "stack0.hg.low2.low2.conv2"));
}

TEST(Hourglass, SkipConvsOnlyWhereChannelsChange) {
    auto skips = [](const Graph& g) {
        std::set<std::string> names;
        for (const auto& l : g.layers)
            if (l.name.size() > 5 && l.name.compare(l.name.size() - 5, 5, ".skip") == 0)
                names.insert(l.name);
        return names;
    };
    EXPECT_EQ(skips(build_hourglass(spec_with_stacks(2))),
              (std::set<std::string>{"pre.res1.skip", "pre.res3.skip"}));
    HourglassSpec narrow = spec_with_stacks(2);
    narrow.features = 128;
    EXPECT_EQ(skips(build_hourglass(narrow)), (std::set<std::string>{"pre.res1.skip"}));

    const Graph one = build_hourglass(spec_with_stacks(1));
    const auto& skip = one.layer("pre.res1.skip");
    EXPECT_EQ(skip.in_channels, 64);
    EXPECT_EQ(skip.out_channels, 128);
    EXPECT_EQ(skip.kernel, 1);
}

TEST(Hourglass, TensorOrderAndShapes) {
    const Graph g = build_hourglass(spec_with_stacks(2));
    const std::pair<const char*, std::vector<int64_t>> first[] = {
        {"pre.conv.weight", {64, 3, 7, 7}},
        {"pre.conv.bias", {64}},
        {"pre.bn.weight", {64}},
        {"pre.bn.bias", {64}},
        {"pre.bn.running_mean", {64}},
        {"pre.bn.running_var", {64}},
        {"pre.res1.bn1.weight", {64}},
        {"pre.res1.bn1.bias", {64}},
        {"pre.res1.bn1.running_mean", {64}},
        {"pre.res1.bn1.running_var", {64}},
        {"pre.res1.conv1.weight", {64, 64, 1, 1}},
        {"pre.res1.conv1.bias", {64}},
        {"pre.res1.bn2.weight", {64}}};
    for (size_t i = 0; i < std::size(first); ++i) {
        EXPECT_EQ(g.tensors[i].name, first[i].first);
        EXPECT_EQ(g.tensors[i].shape, first[i].second) << first[i].first;
    }
    EXPECT_EQ(g.tensors[4].role, TensorRole::running_mean);
    EXPECT_FALSE(g.tensors[5].trainable());
    EXPECT_TRUE(g.tensors[6].trainable());
    EXPECT_EQ(g.tensors.back().name, "stack1.out.bias");

    for (size_t i = 0; i < g.tensors.size(); ++i) {
        const auto& t = g.tensors[i];
        const auto& l = g.layers[static_cast<size_t>(t.layer)];
        EXPECT_EQ(t.name.rfind(l.name + ".", 0), 0u) << t.name;
        const int idx = static_cast<int>(i);
        EXPECT_TRUE(l.weight == idx || l.bias == idx || l.running_mean == idx ||
                    l.running_var == idx)
            << t.name;
        if (i > 0) {
            EXPECT_GE(t.layer, g.tensors[i - 1].layer);
        }
    }

    const auto& conv2 = g.layer("stack0.hg.low1.conv2");
    EXPECT_EQ(g.tensors[static_cast<size_t>(conv2.weight)].shape,
              (std::vector<int64_t>{128, 128, 3, 3}));
    EXPECT_EQ(conv2.padding, 1);
    EXPECT_EQ(conv2.stride, 1);
    const auto& stem = g.layer("pre.conv");
    EXPECT_EQ(stem.kernel, 7);
    EXPECT_EQ(stem.stride, 2);
    EXPECT_EQ(stem.padding, 3);
    EXPECT_EQ(g.layer("stack0.merge_heatmaps").in_channels, 16);
}

TEST(Hourglass, ValueShapesAlongTheNetwork) {
    const Graph g = build_hourglass(HourglassSpec{});
    EXPECT_EQ(value_shape(g, "pre.conv"), (Shape{6, 64, 128, 128}));
    EXPECT_EQ(value_shape(g, "pre.res1.add"), (Shape{6, 128, 128, 128}));
    EXPECT_EQ(value_shape(g, "pre.pool"), (Shape{6, 128, 64, 64}));
    EXPECT_EQ(value_shape(g, "pre.res3.add"), (Shape{6, 256, 64, 64}));
    EXPECT_EQ(value_shape(g, "stack0.hg.up1.add"), (Shape{6, 256, 64, 64}));
    EXPECT_EQ(value_shape(g, "stack0.hg.pool"), (Shape{6, 256, 32, 32}));
    EXPECT_EQ(value_shape(g, "stack0.hg.low2.pool"), (Shape{6, 256, 16, 16}));
    EXPECT_EQ(value_shape(g, "stack0.hg.low2.low2.pool"), (Shape{6, 256, 8, 8}));
    EXPECT_EQ(value_shape(g, "stack0.hg.low2.low2.low2.pool"), (Shape{6, 256, 4, 4}));
    EXPECT_EQ(value_shape(g, "stack0.hg.low2.low2.low2.low2.add"), (Shape{6, 256, 4, 4}));
    EXPECT_EQ(value_shape(g, "stack0.hg.low2.low2.low2.upsample"), (Shape{6, 256, 8, 8}));
    EXPECT_EQ(value_shape(g, "stack0.hg.add"), (Shape{6, 256, 64, 64}));
    EXPECT_EQ(value_shape(g, "stack0.res.conv1"), (Shape{6, 128, 64, 64}));
    EXPECT_EQ(value_shape(g, "stack3.out"), (Shape{6, 16, 64, 64}));
    EXPECT_EQ(value_shape(g, "stack3.merge"), (Shape{6, 256, 64, 64}));
    EXPECT_EQ(value_shape(g, "stack7.loss"), (Shape{1, 1, 1, 1}));
}

TEST(Hourglass, LossesAndMerges) {
    HourglassSpec spec = spec_with_stacks(3);
    for (LossReduction reduction : {LossReduction::sum, LossReduction::mean}) {
        spec.loss = reduction;
        const Graph g = build_hourglass(spec);
        int losses = 0;
        for (const auto& l : g.layers) {
            if (l.kind != LayerKind::mse_loss) continue;
            ++losses;
            ASSERT_EQ(l.inputs.size(), 1u);
            EXPECT_EQ(g.values[static_cast<size_t>(l.inputs[0])].name + "",
                      l.name.substr(0, 6) + ".out");
            EXPECT_FLOAT_EQ(l.loss_weight, reduction == LossReduction::sum ? 1.0f : 1.0f / 3.0f);
        }
        EXPECT_EQ(losses, 3);
    }
    const Graph g = build_hourglass(spec);
    const auto& merge = g.layer("stack1.merge");
    ASSERT_EQ(merge.inputs.size(), 3u);
    EXPECT_EQ(g.values[static_cast<size_t>(merge.inputs[0])].name, "stack0.merge");
    EXPECT_EQ(g.values[static_cast<size_t>(merge.inputs[1])].name, "stack1.merge_features");
    EXPECT_EQ(g.values[static_cast<size_t>(merge.inputs[2])].name, "stack1.merge_heatmaps");
    EXPECT_EQ(g.values[static_cast<size_t>(g.layer("stack1.merge_features").inputs[0])].name,
              "stack1.lin_relu");
    EXPECT_EQ(g.values[static_cast<size_t>(g.layer("stack0.merge").inputs[0])].name,
              "pre.res3.add");
    EXPECT_EQ(g.values[static_cast<size_t>(g.layer("stack2.hg.up1.bn1").inputs[0])].name,
              "stack1.merge");
}

TEST(Hourglass, BatchnormSettingsFromTheSpec) {
    HourglassSpec spec = spec_with_stacks(1);
    spec.bn_momentum = 0.25f;
    spec.bn_eps = 1e-3f;
    const Graph graph = build_hourglass(spec);
    const auto& bn = graph.layer("stack0.lin_bn");
    EXPECT_EQ(bn.momentum, 0.25f);
    EXPECT_EQ(bn.eps, 1e-3f);
}

TEST(Hourglass, ParameterCountsMatchTheHandCalculation) {
    const int64_t params1 = build_hourglass(spec_with_stacks(1)).parameter_count();
    const int64_t params2 = build_hourglass(spec_with_stacks(2)).parameter_count();
    const int64_t params8 = build_hourglass(spec_with_stacks(8)).parameter_count();
    EXPECT_EQ(params1, expected_params(1));
    EXPECT_EQ(params2, expected_params(2));
    EXPECT_EQ(params8, expected_params(8));
    EXPECT_EQ(params1, 3426448);
    EXPECT_EQ(params2, 6570400);
    EXPECT_EQ(params8, 25434112);
    std::printf("parameters: 1 stack %lld, 2 stacks %lld, 8 stacks %lld\n",
                static_cast<long long>(params1), static_cast<long long>(params2),
                static_cast<long long>(params8));
}

TEST(Hourglass, FlopCountsMatchTheHandCalculation) {
    const Graph g1 = build_hourglass(spec_with_stacks(1));
    const Graph g2 = build_hourglass(spec_with_stacks(2));
    const Graph g8 = build_hourglass(spec_with_stacks(8));
    EXPECT_EQ(g1.forward_flops_per_image(), expected_forward_flops(1));
    EXPECT_EQ(g2.forward_flops_per_image(), expected_forward_flops(2));
    EXPECT_EQ(g8.forward_flops_per_image(), expected_forward_flops(8));
    EXPECT_EQ(g1.forward_flops_per_image(), 10373079040);
    EXPECT_EQ(g2.forward_flops_per_image(), 16780967936);
    EXPECT_EQ(g8.forward_flops_per_image(), 55228301312);
    EXPECT_EQ(g1.training_flops_per_step(), 3 * 6 * expected_forward_flops(1));
    EXPECT_EQ(g8.training_flops_per_step(), 994109423616);
    std::printf("forward FLOPs per image: 1 stack %lld, 2 stacks %lld, 8 stacks %lld\n",
                static_cast<long long>(g1.forward_flops_per_image()),
                static_cast<long long>(g2.forward_flops_per_image()),
                static_cast<long long>(g8.forward_flops_per_image()));
}

TEST(Hourglass, ConvBiasOff) {
    HourglassSpec spec = spec_with_stacks(2);
    spec.conv_bias = false;
    const Graph without = build_hourglass(spec);
    const Graph with = build_hourglass(spec_with_stacks(2));
    int64_t conv_out_channels = 0;
    for (const auto& l : with.layers)
        if (l.kind == LayerKind::conv2d) conv_out_channels += l.out_channels;
    EXPECT_EQ(with.parameter_count() - without.parameter_count(), conv_out_channels);
    EXPECT_EQ(without.layer("pre.conv").bias, -1);
    EXPECT_EQ(without.tensors[1].name, "pre.bn.weight");
}

// The seed's TensorFlow model: batch norm with a shift (beta) and no scale (gamma).
TEST(Hourglass, BatchNormScaleOff) {
    HourglassSpec spec = spec_with_stacks(2);
    spec.bn_scale = false;
    const Graph without = build_hourglass(spec);
    const Graph with = build_hourglass(spec_with_stacks(2));
    int64_t bn_channels = 0;
    for (const auto& l : with.layers)
        if (l.kind == LayerKind::batchnorm) bn_channels += with.tensors[size_t(l.bias)].elements();
    EXPECT_GT(bn_channels, 0);
    EXPECT_EQ(with.parameter_count() - without.parameter_count(), bn_channels);
    EXPECT_EQ(without.layer("pre.bn").weight, -1);
    EXPECT_GE(without.layer("pre.bn").bias, 0);
    EXPECT_GE(without.layer("pre.bn").running_var, 0);
    for (const auto& t : without.tensors) EXPECT_NE(t.name, "pre.bn.weight");
}

TEST(Hourglass, ActivationBytesCountEveryValue) {
    HourglassSpec spec;
    spec.stacks = 1;
    spec.features = 4;
    spec.depth = 1;
    spec.input_size = 8;
    spec.batch = 1;
    const Graph g = build_hourglass(spec);
    int64_t elements = 0;
    for (const auto& v : g.values) elements += harness::model::elements(v.shape);
    EXPECT_EQ(g.activation_bytes(), 4 * elements);
    EXPECT_GT(elements, 3 * 8 * 8);
}

TEST(Hourglass, InvalidSpecsAreRejected) {
    auto rejected = [](auto change) {
        HourglassSpec s;
        change(s);
        EXPECT_THROW(build_hourglass(s), std::invalid_argument);
    };
    rejected([](HourglassSpec& s) { s.stacks = 0; });
    rejected([](HourglassSpec& s) { s.features = 0; });
    rejected([](HourglassSpec& s) { s.features = 255; });
    rejected([](HourglassSpec& s) { s.depth = 0; });
    rejected([](HourglassSpec& s) { s.joints = 0; });
    rejected([](HourglassSpec& s) { s.batch = 0; });
    rejected([](HourglassSpec& s) { s.input_size = 200; });  // 200 is not a multiple of 64
    rejected([](HourglassSpec& s) { s.depth = 7; });         // 256 is not a multiple of 512
    rejected([](HourglassSpec& s) { s.bn_eps = 0.0f; });
    try {
        HourglassSpec s;
        s.input_size = 200;
        build_hourglass(s);
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("input_size"), std::string::npos) << e.what();
    }
}
