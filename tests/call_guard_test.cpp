// The argument checks the SDK's trampolines make before any call reaches a plugin's session
// (hb::detail::CallGuard): the messages name the call and the tensor or batch at fault.
#include "hb/plugin.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

namespace {

std::string error_of(const std::function<void()>& call) {
    try {
        call();
    } catch (const hb::Error& e) {
        return e.what();
    }
    return "";
}

hb_graph two_tensors() {
    static hb_tensor tensors[2] = {};
    tensors[0].name = "conv.weight";
    tensors[0].trainable = 1;
    tensors[1].name = "bn.running_mean";
    tensors[1].trainable = 0;
    hb_graph g = hb_empty_graph();
    g.num_tensors = 2;
    g.tensors = tensors;
    return g;
}

TEST(CallGuard, NamesTheTensorWithoutABuffer) {
    const hb_graph g = two_tensors();
    const hb::detail::CallGuard guard(&g);
    float x = 0;
    const void* both[2] = {&x, nullptr};
    EXPECT_EQ(error_of([&] { guard.tensors("load_state", both, false); }),
              "load_state: no buffer for tensor 'bn.running_mean'");
    // The optimizer state has one buffer per trainable tensor only.
    const void* trainable[1] = {&x};
    EXPECT_EQ(error_of([&] { guard.tensors("load_optimizer_state", trainable, true); }), "");
    const void* missing[1] = {nullptr};
    EXPECT_EQ(error_of([&] { guard.tensors("load_optimizer_state", missing, true); }),
              "load_optimizer_state: no buffer for tensor 'conv.weight'");
    EXPECT_EQ(error_of([&] { guard.tensors("read_state", nullptr, false); }),
              "read_state: no buffers");
}

TEST(CallGuard, ChecksTheBatches) {
    const hb_graph g = two_tensors();
    const hb::detail::CallGuard guard(&g);
    float x = 0;
    const float* one[1] = {&x};
    const float* none[1] = {nullptr};
    EXPECT_EQ(error_of([&] { guard.batches(0, one, one); }),
              "set_batches: expected at least one batch, got 0");
    EXPECT_EQ(error_of([&] { guard.batches(1, one, none); }),
              "set_batches: batch 0 has no input or target");
    EXPECT_EQ(error_of([&] { guard.batches(1, one, one); }), "");
}

TEST(CallGuard, AStepNeedsStateAndBatchesAndWrapsTheIndex) {
    hb::detail::CallGuard guard(nullptr);
    EXPECT_NE(error_of([&] { guard.batch_index(0); }).find("call load_state first"),
              std::string::npos);
    guard.state_loaded();
    EXPECT_NE(error_of([&] { guard.batch_index(0); }).find("call set_batches first"),
              std::string::npos);
    guard.batches_set(3);
    EXPECT_EQ(guard.batch_index(0), 0);
    EXPECT_EQ(guard.batch_index(4), 1);
    EXPECT_EQ(guard.batch_index(-1), 2);
}

TEST(CallGuard, TheInputGradientIsReadOnlyWhereAskedAfterAStep) {
    hb::detail::CallGuard unasked(nullptr);
    unasked.stepped();
    try {
        unasked.check_input_gradient();
        ADD_FAILURE() << "a session not asked for the input's gradient may read it";
    } catch (const hb::Error& e) {
        EXPECT_EQ(e.status(), HB_UNSUPPORTED);
        EXPECT_NE(std::string(e.what()).find("hb_session_desc.input_gradient"), std::string::npos);
    }
    hb::detail::CallGuard asked(nullptr, true);
    EXPECT_EQ(error_of([&] { asked.check_input_gradient(); }),
              "read_input_gradient: no step has run yet");
    asked.stepped();
    EXPECT_EQ(error_of([&] { asked.check_input_gradient(); }), "");
}


// A plugin whose create_session is never to be reached with a description the SDK refuses.
class Unreached : public hb::Plugin {
public:
    hb::PluginInfo describe() override {
        hb::PluginInfo info;
        info.name = "unreached";
        info.capabilities = HB_CAP_GRADIENTS;  // no HB_CAP_HOST_PLACEMENT
        return info;
    }
    std::unique_ptr<hb::Session> create_session(const hb_session_desc&) override {
        throw hb::Error("reached");
    }
};

// The trampoline checks every session description before the plugin sees it, and a placement
// against the capability the plugin announces.
TEST(Trampolines, CheckTheSessionDescriptionAndThePlacementsCapability) {
    const hb_plugin_api* api = hb::detail::Trampolines<Unreached>::table();
    hb_graph graph = hb_empty_graph();
    hb_optimizer optimizer{};
    optimizer.variant = HB_RMSPROP_TORCH;
    hb_session_desc desc{};
    desc.graph = &graph;
    desc.optimizer = &optimizer;
    desc.device = "cpu";
    hb_session* session = nullptr;

    EXPECT_NE(api->create_session(&desc, &session), HB_OK);  // struct_size 0
    EXPECT_EQ(std::string(api->last_error()).find("session description is too small"), 0u)
        << api->last_error();

    desc.struct_size = sizeof desc;
    desc.placement = HB_PLACEMENT_HOST;
    EXPECT_EQ(api->create_session(&desc, &session), HB_UNSUPPORTED);
    EXPECT_STREQ(api->last_error(),
                 "placement host: this plugin does not announce HB_CAP_HOST_PLACEMENT");

    desc.placement = HB_PLACEMENT_DEVICE;
    EXPECT_NE(api->create_session(&desc, &session), HB_OK);
    EXPECT_STREQ(api->last_error(), "reached");
    EXPECT_EQ(session, nullptr);
}

}  // namespace
