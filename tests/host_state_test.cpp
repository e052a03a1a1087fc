// hb::HostState (include/hb/host_state.hpp): a CPU backend's tensors, gradients, RMSProp state and
// batches, and the Session calls it answers, on a hand-made graph of one convolution's weight and
// bias and a batch norm's running mean.
#include "hb/host_state.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {

hb::Graph three_tensors() {
    hb::Graph g;
    g.values = {hb::Dims{1, 1, 2, 2}};  // the input: 4 elements
    g.input = 0;
    g.target = hb::Dims{1, 1, 1, 3};  // 3 elements
    g.tensors = {{"conv.weight", 0, HB_ROLE_WEIGHT, {2}, true, 2},
                 {"bn.running_mean", 1, HB_ROLE_RUNNING_MEAN, {3}, false, 3},
                 {"conv.bias", 0, HB_ROLE_BIAS, {1}, true, 1}};
    return g;
}

hb_optimizer torch_rmsprop(float momentum) {
    hb_optimizer o{};
    o.variant = HB_RMSPROP_TORCH;
    o.learning_rate = 0.01f;
    o.alpha = 0.9f;
    o.eps = 1e-3f;
    o.momentum = momentum;
    o.initial_square_average = 0.25f;
    return o;
}

TEST(HostState, OptimizerSlotsCountTheTrainableTensorsInTheGraphsOrder) {
    EXPECT_EQ(hb::trainable_slots(three_tensors()), (std::vector<int>{0, -1, 1}));
}

TEST(HostState, HoldsEachTensorAndOnlyTheTrainableOnesHaveGradientsAndOptimizerState) {
    hb::HostState<double> s(three_tensors(), torch_rmsprop(0));
    ASSERT_EQ(s.num_tensors(), 3);
    EXPECT_TRUE(s.trainable(0));
    EXPECT_FALSE(s.trainable(1));
    EXPECT_EQ(s.tensor(1), (std::vector<double>(3, 0.0)));
    EXPECT_EQ(s.gradient(0).size(), 2u);
    EXPECT_TRUE(s.gradient(1).empty());
    EXPECT_EQ(s.square_average(2), (std::vector<double>{0.25}));
    EXPECT_TRUE(s.square_average(1).empty());
    EXPECT_TRUE(s.momentum_buffer(0).empty()) << "no momentum, no buffer";
    hb::HostState<double> with_momentum(three_tensors(), torch_rmsprop(0.9f));
    EXPECT_EQ(with_momentum.momentum_buffer(0), (std::vector<double>(2, 0.0)));
}

TEST(HostState, LoadsAndReadsTheAbisFloatBuffersAsItsOwnType) {
    hb::HostState<double> s(three_tensors(), torch_rmsprop(0));
    const std::vector<float> w{0.5f, -1.5f}, mean{1, 2, 3}, b{0.25f};
    const float* state[] = {w.data(), mean.data(), b.data()};
    s.load_state(state);
    EXPECT_EQ(s.tensor(0), (std::vector<double>{0.5, -1.5}));
    std::vector<float> out_w(2), out_mean(3), out_b(1);
    float* out[] = {out_w.data(), out_mean.data(), out_b.data()};
    s.read_state(out);
    EXPECT_EQ(out_w, w);
    EXPECT_EQ(out_mean, mean);
    EXPECT_EQ(out_b, b);

    s.gradient(0) = {3, 4};
    s.gradient(2) = {5};
    std::vector<float> g_w(2, -1), g_b(1, -1);
    float* gradients[] = {g_w.data(), nullptr, nullptr};
    s.read_gradients(gradients);
    EXPECT_EQ(g_w, (std::vector<float>{3, 4}));
    gradients[2] = g_b.data();
    s.read_gradients(gradients);
    EXPECT_EQ(g_b, (std::vector<float>{5}));
}

TEST(HostState, LoadOptimizerStateTakesOneSquareAveragePerTrainableTensor) {
    hb::HostState<float> s(three_tensors(), torch_rmsprop(0));
    const std::vector<float> v_w{7, 8}, v_b{9};
    const float* averages[] = {v_w.data(), v_b.data()};
    s.load_optimizer_state(averages);
    EXPECT_EQ(s.square_average(0), v_w);
    EXPECT_EQ(s.square_average(2), v_b);
}

TEST(HostState, SetBatchesReplacesThemAndUpdateIsRmsPropOnItsOwnState) {
    hb::HostState<float> s(three_tensors(), torch_rmsprop(0.9f));
    const std::vector<float> in0{1, 2, 3, 4}, in1{5, 6, 7, 8}, t0{1, 1, 1}, t1{2, 2, 2};
    const float* inputs[] = {in0.data(), in1.data()};
    const float* targets[] = {t0.data(), t1.data()};
    s.set_batches(2, inputs, targets);
    EXPECT_EQ(s.input(1), in1);
    EXPECT_EQ(s.target(0), t0);
    s.set_batches(1, inputs + 1, targets + 1);
    EXPECT_EQ(s.input(0), in1);
    EXPECT_EQ(s.bytes(), (2 + 3 + 1 + 2 + 1 + 2 + 1 + 2 + 1 + 4 + 3) * sizeof(float));

    s.tensor(0) = {0.5f, -0.5f};
    s.gradient(0) = {0.3f, -0.2f};
    std::vector<float> p = s.tensor(0), g = s.gradient(0), v(2, 0.25f), b(2, 0.0f);
    for (int step = 0; step < 2; ++step) {
        s.update(0, 0, 1);
        s.update(0, 1, 2);
        hb::rmsprop_update(torch_rmsprop(0.9f), 0, 2, p.data(), g.data(), v.data(), b.data());
    }
    EXPECT_EQ(s.tensor(0), p);
    EXPECT_EQ(s.square_average(0), v);
    EXPECT_EQ(s.momentum_buffer(0), b);
}

}  // namespace
