// The cuDNN plugin's description, its clean HB_UNAVAILABLE without a GPU, and its refusal of
// unknown options and values.
#include "backend_comparison.hpp"
#include "cudnn_gpu_session.hpp"
#include "loaded_plugin.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace {

using namespace cudnn_test;
using harness::testing::rmsprop;

const hb_plugin_info& plugin_info() {
    return harness::testing::describe(plugin_api());
}

TEST(CudnnPlugin, Describes) {
    const hb_plugin_info& info = plugin_info();
    EXPECT_EQ(std::string(info.name), "cudnn");
    EXPECT_EQ(std::string(info.version), "1.0.0");
    bool cudnn = false;
    for (int32_t i = 0; i < info.num_libraries; ++i)
        cudnn = cudnn || std::string(info.libraries[i].name) == "cuDNN";
    EXPECT_TRUE(cudnn);
    ASSERT_GE(info.num_devices, 1);
    EXPECT_EQ(std::string(info.devices[0].name), "cuda:0");
    EXPECT_TRUE(info.capabilities & HB_CAP_GRADIENTS);
    EXPECT_TRUE(info.capabilities & HB_CAP_PROFILE);
    EXPECT_NE(plugin_api().set_profiling, nullptr);
    EXPECT_NE(plugin_api().read_events, nullptr);
    EXPECT_TRUE(info.capabilities & HB_CAP_DATA_PARALLEL);
    EXPECT_NE(plugin_api().gradient_buffers, nullptr);
    EXPECT_NE(plugin_api().forward_backward, nullptr);
    EXPECT_NE(plugin_api().apply_update, nullptr);
    EXPECT_TRUE(info.capabilities & HB_CAP_INPUT_GRADIENT);
    EXPECT_NE(plugin_api().read_input_gradient, nullptr);
}

TEST(CudnnPlugin, WithoutDeviceSessionIsUnavailable) {
    const std::string reason = harness::testing::unavailable_reason(plugin_api(), "cuda:0");
    if (reason.empty()) GTEST_SKIP() << "a CUDA device is present";
    const hb_optimizer o = rmsprop(HB_RMSPROP_TORCH);
    std::vector<hb_option> options;
    const hb_session_desc desc = describe_session(StepMode{}, o, options, "cuda:0");
    hb_session* session = nullptr;
    EXPECT_EQ(plugin_api().create_session(&desc, &session), HB_UNAVAILABLE);
    EXPECT_EQ(session, nullptr);
    const std::string message = plugin_api().last_error();
    EXPECT_NE(message.find(reason), std::string::npos) << message;
}

TEST(CudnnPlugin, RejectsUnknownOptionsAndValues) {
    const hb_optimizer o = rmsprop(HB_RMSPROP_TORCH);
    std::vector<hb_option> options;
    for (const auto& kv :
         std::vector<std::pair<std::string, std::string>>{{"math", "fp16"}, {"tile", "4"}}) {
        StepMode s;
        s.options = {kv};
        const hb_session_desc desc = describe_session(s, o, options, "cuda:0");
        hb_session* session = nullptr;
        EXPECT_EQ(plugin_api().create_session(&desc, &session), HB_UNSUPPORTED) << kv.first;
    }
}

}  // namespace
