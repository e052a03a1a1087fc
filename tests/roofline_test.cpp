// The roofline (harness/roofline/, docs/roofline.md): each layer kind's FLOPs and bytes against
// hand counts on a small graph, the bound and its binding ceiling, the step's sum by kind, and the
// ceilings measured on this machine.
#include "roofline/step_bound.hpp"

#include "graph_builder.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using harness::roofline::Cost;

// input [2,3,8,8] -> conv c1 (3->4, 3x3, pad 1, bias) -> bn -> relu -> maxpool -> upsample
// -> add(upsample, relu) -> conv c2 (4->2, 1x1, no bias) -> loss.
harness::model::Graph small() {
    harness::testing::GraphBuilder b;
    const int x = b.input({2, 3, 8, 8});
    const int c1 = b.conv("c1", x, 4, 3, 1, 1);
    const int r = b.relu("relu", b.batchnorm("bn", c1));
    const int up = b.upsample("up", b.maxpool("pool", r));
    b.loss("loss", b.conv("c2", b.add("add", {up, r}), 2, 1, 1, 0, false));
    return b.take();
}

Cost cost_of(const harness::model::Graph& g, const std::string& layer) {
    return harness::roofline::layer_cost(g, g.layer(layer));
}

void expect_cost(const Cost& c, int64_t ff, int64_t bf, int64_t fb, int64_t bb) {
    EXPECT_EQ(c.forward_flops, ff);
    EXPECT_EQ(c.backward_flops, bf);
    EXPECT_EQ(c.forward_bytes, fb);
    EXPECT_EQ(c.backward_bytes, bb);
}

TEST(Roofline, EachLayerKindsFlopsAndBytesAreTheHandCounts) {
    const auto g = small();
    // c1: x 2*3*64 = 384, w 4*3*9 = 108, b 4, y 2*4*64 = 512; it reads the model's input, so its
    // backward computes the weights' and the bias's gradients only.
    expect_cost(cost_of(g, "c1"), 2 * 3 * 9 * 512 + 512, 2 * 3 * 9 * 512 + 512,
                (384 + 108 + 4 + 512) * 4, (512 + 384 + 108 + 4) * 4);
    // bn: 512 elements, 4 channels.
    expect_cost(cost_of(g, "bn"), 8 * 512, 9 * 512, (512 + 512 + 6 * 4) * 4, (3 * 512 + 3 * 4) * 4);
    expect_cost(cost_of(g, "relu"), 512, 512, 2 * 512 * 4, 3 * 512 * 4);
    // pool: 512 in, 128 out.
    expect_cost(cost_of(g, "pool"), 3 * 128, 3 * 128, (512 + 128) * 4, (128 + 2 * 512) * 4);
    expect_cost(cost_of(g, "up"), 0, 3 * 128, (128 + 512) * 4, (512 + 128) * 4);
    expect_cost(cost_of(g, "add"), 512, 0, 3 * 512 * 4, 0);
    // c2: x 512, w 2*4 = 8, no bias, y 2*2*64 = 256; its backward computes both gradients.
    expect_cost(cost_of(g, "c2"), 2 * 4 * 256, 2 * 2 * 4 * 256, (512 + 8 + 256) * 4,
                (256 + 512 + 8 + 8 + 512) * 4);
    expect_cost(cost_of(g, "loss"), 3 * 256, 2 * 256, 2 * 256 * 4, 3 * 256 * 4);
    // RMSProp: 108 + 4 + 4 + 4 + 8 = 128 trainable elements.
    expect_cost(harness::roofline::optimizer_cost(g, false, false), 0, 9 * 128, 0, 5 * 128 * 4);
    expect_cost(harness::roofline::optimizer_cost(g, true, true), 0, 13 * 128, 0, 7 * 128 * 4);
}

harness::roofline::Ceilings giga() {
    harness::roofline::Ceilings c;
    c.flops.best = 1e9;  // 1 GFLOP/s
    c.bytes.best = 1e9;  // 1 GB/s
    return c;
}

TEST(Roofline, TheBoundIsTheSlowerCeilingsTimeAndSaysWhichBinds) {
    const auto g = small();
    const auto conv = harness::roofline::bound_of(cost_of(g, "c1"), giga());
    EXPECT_TRUE(conv.compute_bound);
    EXPECT_DOUBLE_EQ(conv.seconds, 2 * (2 * 3 * 9 * 512 + 512) / 1e9);
    const auto relu = harness::roofline::bound_of(cost_of(g, "relu"), giga());
    EXPECT_FALSE(relu.compute_bound);
    EXPECT_DOUBLE_EQ(relu.seconds, 5 * 512 * 4 / 1e9);
}

TEST(Roofline, TheStepsBoundIsItsLayersBoundsAndTheUpdatesByKind) {
    const auto g = small();
    const auto step = harness::roofline::step_bound(g, false, false, giga());
    std::vector<std::string> kinds;
    double sum = 0;
    for (const auto& k : step.kinds) {
        kinds.push_back(k.kind);
        sum += k.seconds;
    }
    EXPECT_EQ(kinds, (std::vector<std::string>{"conv2d", "batchnorm", "relu", "maxpool2d",
                                               "upsample", "add", "mse_loss", "rmsprop"}));
    EXPECT_EQ(step.kinds[0].layers, 2);
    EXPECT_TRUE(step.kinds[0].compute_bound());
    EXPECT_FALSE(step.kinds[2].compute_bound());
    EXPECT_DOUBLE_EQ(step.seconds, sum);
}

TEST(Roofline, TheCeilingsAreMeasuredWithTheirSpread) {
    const auto m = harness::roofline::spread_of({3, 1, 2, 4});
    EXPECT_EQ(m.best, 4);
    EXPECT_EQ(m.worst, 1);
    EXPECT_EQ(m.median, 2.5);
    const auto c = harness::roofline::measure_ceilings(1);
    EXPECT_EQ(c.threads, 1);
    for (const auto& ceiling : {c.flops, c.bytes}) {
        EXPECT_GT(ceiling.worst, 0);
        EXPECT_LE(ceiling.worst, ceiling.median);
        EXPECT_LE(ceiling.median, ceiling.best);
        EXPECT_GE(ceiling.repetitions, 5);
        EXPECT_FALSE(ceiling.how.empty());
    }
}

}  // namespace
