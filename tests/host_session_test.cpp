// hb::HostSession (include/hb/host_session.hpp): the graph walk a CPU backend's kernels are called
// from. Kernels that write constants show what the base does around them: the order of the
// passes, a value's gradient summed over its readers, the gradient buffers final in their order,
// the batch staged with placement host, the input's gradient only when asked for.
#include "hb/host_session.hpp"

#include "graph_builder.hpp"
#include "model/graph.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

// input [1,1,2,2] -> conv (1x1) -> relu -> add(relu, conv) -> loss: the conv's output has two
// readers.
harness::model::Graph two_readers() {
    harness::testing::GraphBuilder b;
    const int x = b.input({1, 1, 2, 2});
    const int c = b.conv("conv", x, 1, 1, 1, 0);
    const int r = b.relu("relu", c);
    b.loss("loss", b.add("add", {r, c}));
    return b.take();
}

// Each forward writes 5, each backward writes its number of the kind's order to every gradient it
// sends (relu 1, add 2, conv the gradient it receives): the conv's output gets 1 + 2.
class Constants : public hb::HostSession {
public:
    using hb::HostSession::HostSession;
    std::vector<std::string> calls;
    const float* conv_input = nullptr;

protected:
    void note(const hb::LayerPass& p, bool forward) {
        calls.push_back(p.layer.name + (forward ? "" : "'"));
        if (forward) std::fill(p.y, p.y + p.y_dims.elements(), 5.0f);
    }
    void fill(const hb::LayerPass& p, float value) {
        for (size_t s = 0; s < p.dx.size(); ++s)
            if (p.dx[s]) std::fill(p.dx[s], p.dx[s] + p.x_dims[s].elements(), value);
    }
    void conv2d(const hb::LayerPass& p) override { note(p, true), conv_input = p.x[0]; }
    void conv2d_backward(const hb::LayerPass& p) override {
        note(p, false);
        if (p.dx[0]) std::copy(p.dy, p.dy + 4, p.dx[0]);
        p.dweight[0] = 7, p.dbias[0] = 8;
    }
    void batchnorm(const hb::LayerPass& p) override { note(p, true); }
    void batchnorm_backward(const hb::LayerPass& p) override { note(p, false); }
    void relu(const hb::LayerPass& p) override { note(p, true); }
    void relu_backward(const hb::LayerPass& p) override { note(p, false), fill(p, 1); }
    void maxpool2d(const hb::LayerPass& p) override { note(p, true); }
    void maxpool2d_backward(const hb::LayerPass& p) override { note(p, false); }
    void upsample(const hb::LayerPass& p) override { note(p, true); }
    void upsample_backward(const hb::LayerPass& p) override { note(p, false); }
    void add(const hb::LayerPass& p) override { note(p, true); }
    void add_backward(const hb::LayerPass& p) override { note(p, false), fill(p, 2); }
    void mse_loss(const hb::LayerPass& p) override { note(p, true), p.y[0] = 0.5f; }
    void mse_loss_backward(const hb::LayerPass& p) override {
        note(p, false);
        EXPECT_EQ(p.dy[0], 1.0f);
        fill(p, 3);
    }
};

struct Fixture {
    harness::model::Graph graph = two_readers();
    harness::model::AbiGraph abi{graph};
    hb_optimizer optimizer{HB_RMSPROP_TORCH, 0.1f, 0.9f, 1e-8f, 0, 0, 0};
    std::vector<float> input = {1, 2, 3, 4}, target = {0, 0, 0, 0};

    hb_session_desc desc(hb_placement placement, bool input_gradient) {
        hb_session_desc d{};
        d.struct_size = sizeof d;
        d.graph = abi.get();
        d.optimizer = &optimizer;
        d.device = "cpu";
        d.placement = placement;
        d.input_gradient = input_gradient;
        d.read_back = 1;
        return d;
    }
    void load(Constants& s) {
        const float w = 1, b = 0;
        const float* tensors[] = {&w, &b};
        s.load_state(tensors);
        const float* inputs[] = {input.data()};
        const float* targets[] = {target.data()};
        s.set_batches(1, inputs, targets);
    }
};

TEST(HostSession, WalksForwardThenBackwardAndSumsAValuesGradientOverItsReaders) {
    Fixture f;
    Constants s(f.desc(HB_PLACEMENT_DEVICE, true), "test");
    f.load(s);
    std::vector<int32_t> ready;
    const hb::GradientReady note_ready{
        [](void* into, int32_t b) { static_cast<std::vector<int32_t>*>(into)->push_back(b); },
        &ready};
    EXPECT_EQ(s.forward_backward(0, note_ready).loss, 0.5);
    EXPECT_EQ(s.calls, (std::vector<std::string>{"conv", "relu", "add", "loss", "loss'", "add'",
                                                 "relu'", "conv'"}));
    EXPECT_EQ(ready, (std::vector<int32_t>{0, 1}));
    std::vector<float> dx(4);
    s.read_input_gradient(dx.data());
    EXPECT_EQ(dx, (std::vector<float>(4, 1 + 2)));
    const auto buffers = s.gradient_buffers();
    ASSERT_EQ(buffers.size(), 2u);
    EXPECT_EQ(static_cast<const float*>(buffers[0].data)[0], 7);  // the weight's, then the bias's
    EXPECT_EQ(static_cast<const float*>(buffers[1].data)[0], 8);
}

TEST(HostSession, StagesTheBatchWithPlacementHostAndSendsTheInputNoGradientUnasked) {
    Fixture f;
    Constants s(f.desc(HB_PLACEMENT_HOST, false), "test");
    f.load(s);
    s.step(0);
    EXPECT_NE(s.conv_input, nullptr);
    EXPECT_EQ(std::vector<float>(s.conv_input, s.conv_input + 4), f.input);
    std::vector<float> w(1), b(1);
    float* gradients[] = {w.data(), b.data()};
    s.read_gradients(gradients);
    EXPECT_EQ(w[0], 7);
    EXPECT_EQ(b[0], 8);
}

TEST(HostSession, RefusesADeviceOtherThanTheCpu) {
    Fixture f;
    hb_session_desc d = f.desc(HB_PLACEMENT_DEVICE, false);
    d.device = "cuda:0";
    EXPECT_THROW(Constants(d, "test"), hb::Error);
}

}  // namespace
