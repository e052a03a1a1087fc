// The SDK's topology and gradient plan (include/hb/topology.hpp): who writes each gradient and
// who adds to it, which buffers an add's inputs share, which batch norms absorb their ReLU, and
// which layers run backward at all.
#include "hb/topology.hpp"
#include "graph_builder.hpp"
#include "model/graph.hpp"

#include <gtest/gtest.h>

namespace {

using harness::model::AbiGraph;
using harness::testing::GraphBuilder;

// The residual pattern y = conv(relu(bn(x))) + x: the add's gradient buffer serves both of its
// inputs, and the batch norm's contribution to x is added to it.
TEST(Topology, AddInputsShareTheOutputGradientAndFusionAbsorbsTheRelu) {
    GraphBuilder b;
    const int x0 = b.input({2, 8, 8, 8});
    const int x = b.conv("stem", x0, 8, 1, 1, 0);
    int y = b.batchnorm("bn", x);
    y = b.relu("relu", y);
    y = b.conv("conv", y, 8, 3, 1, 1);
    const int sum = b.add("add", {y, x});
    b.loss("loss", sum);
    const harness::model::Graph g = b.take();
    const AbiGraph abi(g);
    const hb::Graph graph = hb::import_graph(*abi.get(), {"test", false});
    const auto topology = hb::analyse(graph, hb::fusable_batchnorms(graph));
    EXPECT_EQ(topology.fused_relu[1], 2);
    EXPECT_TRUE(topology.absorbed[2]);
    EXPECT_FALSE(topology.has_gradient[x0]);
    const auto plan = hb::plan_gradients(graph, topology, {[](int, int) { return true; }});
    EXPECT_EQ(plan.buffer[y], plan.buffer[sum]);
    EXPECT_EQ(plan.buffer[x], plan.buffer[sum]);
    using hb::Delivery;
    ASSERT_EQ(plan.contributions[1].size(), 1u);  // the batch norm, into x
    EXPECT_EQ(plan.contributions[1][0].delivery, Delivery::write_then_add);
    for (const auto& c : plan.contributions[4]) EXPECT_EQ(c.delivery, Delivery::share);

    // Without a shared layout the add's inputs get their own buffers.
    const auto apart = hb::plan_gradients(graph, topology);
    EXPECT_NE(apart.buffer[y], apart.buffer[sum]);
    EXPECT_EQ(apart.contributions[4][0].delivery, Delivery::copy);
}

TEST(Topology, AValueAddedToItselfIsNotSharedWithTheSum) {
    GraphBuilder b;
    const int x = b.conv("conv", b.input({1, 8, 4, 4}), 8, 1, 1, 0);
    const int sum = b.add("add", {x, x});
    b.loss("loss", sum);
    const harness::model::Graph g = b.take();
    const AbiGraph abi(g);
    const hb::Graph graph = hb::import_graph(*abi.get(), {"test", false});
    const auto topology = hb::analyse(graph, hb::fusable_batchnorms(graph));
    const auto plan = hb::plan_gradients(graph, topology, {[](int, int) { return true; }});
    EXPECT_NE(plan.buffer[x], plan.buffer[sum]);
    ASSERT_EQ(plan.contributions[1].size(), 2u);
    EXPECT_EQ(plan.contributions[1][0].delivery, hb::Delivery::copy);
    EXPECT_EQ(plan.contributions[1][1].delivery, hb::Delivery::add_from);
}

// A backend whose backward operations all add into a buffer in place (as cuDNN's do with a blend
// factor) accumulates every later contribution instead of writing a temporary.
TEST(Topology, InPlaceBackwardsAccumulateLaterContributions) {
    GraphBuilder b;
    const int x = b.conv("stem", b.input({2, 8, 8, 8}), 8, 1, 1, 0);
    const int y = b.conv("conv", b.relu("relu", x), 8, 3, 1, 1);
    b.loss("loss", b.add("add", {y, x}));
    const harness::model::Graph g = b.take();
    const AbiGraph abi(g);
    const hb::Graph graph = hb::import_graph(*abi.get(), {"test", false});
    const hb::Topology topology = hb::analyse(graph, {});
    hb::GradientRules rules;
    rules.adds_in_place = [](hb_layer_kind) { return true; };
    const hb::GradientPlan plan = hb::plan_gradients(graph, topology, rules);
    // x is read by the relu (layer 1) and by the add (layer 3); backward runs the add first.
    ASSERT_EQ(plan.contributions[1].size(), 1u);
    EXPECT_EQ(plan.contributions[1][0].delivery, hb::Delivery::accumulate);
    EXPECT_TRUE(hb::adds_to_buffer(plan.contributions[1][0].delivery));
    EXPECT_EQ(plan.contributions[3][1].delivery, hb::Delivery::copy);
    EXPECT_FALSE(hb::adds_to_buffer(plan.contributions[3][1].delivery));
}

// The graph's input has a gradient only when one is asked for.
TEST(Topology, TheInputHasAGradientOnlyWhenAskedFor) {
    GraphBuilder b;
    const int input = b.input({2, 8, 8, 8});
    b.loss("loss", b.relu("relu", b.conv("stem", input, 8, 1, 1, 0)));
    const harness::model::Graph g = b.take();
    const AbiGraph abi(g);
    const hb::Graph graph = hb::import_graph(*abi.get(), {"test", false});
    EXPECT_FALSE(hb::analyse(graph, {}).has_gradient[input]);
    EXPECT_TRUE(hb::analyse(graph, {}, true).has_gradient[input]);
}

// A value no loss depends on has no gradient, and the layer computing it does not run backward.
TEST(Topology, ALayerNoLossDependsOnDoesNotRunBackward) {
    GraphBuilder b;
    const int x = b.conv("stem", b.input({2, 8, 8, 8}), 8, 1, 1, 0);
    const int dead = b.conv("unused", x, 8, 1, 1, 0);
    b.loss("loss", b.relu("relu", x));
    const harness::model::Graph g = b.take();
    const AbiGraph abi(g);
    const hb::Graph graph = hb::import_graph(*abi.get(), {"test", false});
    const hb::Topology topology = hb::analyse(graph, {});
    EXPECT_FALSE(topology.runs_backward[1]);
    EXPECT_FALSE(topology.has_gradient[dead]);
    EXPECT_TRUE(topology.runs_backward[0]);
    EXPECT_TRUE(topology.has_gradient[x]);
}

TEST(Topology, OnlyABatchNormThatOneReluAloneReadsCanBeFused) {
    GraphBuilder b;
    const int x = b.batchnorm("bn", b.input({2, 8, 8, 8}));
    const int y = b.relu("relu", x);
    b.loss("loss", b.add("add", {y, x}));  // the batch norm's output has a second reader
    const harness::model::Graph g = b.take();
    const AbiGraph abi(g);
    const hb::Graph graph = hb::import_graph(*abi.get(), {"test", false});
    EXPECT_TRUE(hb::fusable_batchnorms(graph).empty());
    EXPECT_THROW(hb::analyse(graph, {0}), hb::Error);
}

}  // namespace
