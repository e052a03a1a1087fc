// The cuDNN backend through its C ABI, loaded with dlopen as the harness loads it: its description
// and, without a GPU, a clean HB_UNAVAILABLE; with one, its training step against the reference
// backend on the check network (losses, every gradient after the first step, parameters and
// running statistics after the second), judged as `harness check` judges it, in each layout,
// fusion, graph, placement and math mode.
#include "backend_comparison.hpp"
#include "check_problem.hpp"
#include "loaded_plugin.hpp"
#include "session.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using harness::check::StepCapture;
using harness::check::Tolerance;
using harness::check::tolerance_for;
using harness::testing::rmsprop;

const hb_plugin_api& plugin_api() {
    static const hb_plugin_api& api = harness::testing::load_plugin(
        harness::testing::plugin_path("hb_cudnn.so", "HB_CUDNN_PLUGIN"));
    return api;
}

const hb_plugin_info& plugin_info() {
    return harness::testing::describe(plugin_api());
}

#define SKIP_WITHOUT_CUDA() HB_SKIP_WITHOUT_DEVICE(plugin_api(), "cuda:0")

const harness::testing::CheckProblem& problem() {
    return harness::testing::check_problem();
}

struct StepMode {
    std::string name;
    std::vector<std::pair<std::string, std::string>> options;
    hb_placement placement = HB_PLACEMENT_DEVICE;
    hb_rmsprop_variant variant = HB_RMSPROP_TORCH;
    std::string math() const {
        for (const auto& kv : options)
            if (kv.first == "math") return kv.second;
        return "fp32";
    }
    friend std::ostream& operator<<(std::ostream& out, const StepMode& m) { return out << m.name; }
};

hb_session_desc describe_session(const StepMode& s, const hb_optimizer& o,
                                 std::vector<hb_option>& options, const char* device) {
    options.clear();
    for (const auto& kv : s.options) options.push_back({kv.first.c_str(), kv.second.c_str()});
    return harness::testing::session_desc(problem().abi, o, options, device, s.placement);
}

// Two reference steps, as `harness check` captures them; from weights one ulp of a
// `perturb_bits`-bit format away when that is positive (the rounding-noise yardstick).
StepCapture reference_run(hb_rmsprop_variant variant, int perturb_bits = 0) {
    const hb_optimizer o = rmsprop(variant);
    std::vector<hb_option> options;
    StepMode plain;
    plain.variant = variant;
    plain.options = {{"threads", "4"}};
    reference::ReferenceSession session(describe_session(plain, o, options, "cpu"));
    const auto& p = problem();
    const harness::testing::Tensors weights =
        perturb_bits > 0
            ? harness::testing::one_ulp_away(p.graph, p.config.seed, p.state, perturb_bits)
            : p.state;
    return harness::testing::capture_after(
        p.graph, harness::testing::run_steps(session, {p.graph, weights, p.batches}, 2), 2);
}

StepCapture cudnn_run(const StepMode& s) {
    const hb_optimizer o = rmsprop(s.variant);
    std::vector<hb_option> options;
    harness::testing::AbiSession session(plugin_api(), describe_session(s, o, options, "cuda:0"));
    if (session.status() != HB_OK) throw std::runtime_error("create_session: " + session.error());
    const auto& p = problem();
    const harness::testing::Trace run =
        harness::testing::run_steps(session, {p.graph, p.state, p.batches}, 2);
    for (const hb::StepResult& r : run.steps) {
        EXPECT_GT(r.forward_ms, 0);
        EXPECT_GT(r.backward_ms, 0);
        EXPECT_GT(r.optimizer_ms, 0);
    }
    EXPECT_GT(session.peak_memory_bytes(), 0u);
    const std::string manifest = session.manifest_json();
    EXPECT_NE(manifest.find("\"convolutions\""), std::string::npos);
    EXPECT_NE(manifest.find("\"math\": \"" + s.math() + "\""), std::string::npos) << manifest;
    // bf16 normalises with the backend's own kernels; otherwise cuDNN's Ex calls, unless the
    // mode asks for the legacy ones.
    const bool legacy = std::find(s.options.begin(), s.options.end(),
                                  std::make_pair(std::string("batchnorm"),
                                                 std::string("legacy"))) != s.options.end();
    if (s.math() != "bf16") {
        EXPECT_EQ(manifest.find("\"batchnorm_ex_layers\": 0,") != std::string::npos, legacy)
            << manifest;
    }
    return harness::testing::capture_after(p.graph, run, 2);
}

class CudnnStep : public ::testing::TestWithParam<StepMode> {};

// What `harness check` decides, in process: the mode's tolerance, or ten times the reference's
// own rounding noise at the mode's precision.
TEST_P(CudnnStep, PassesTheCheckAgainstTheReference) {
    SKIP_WITHOUT_CUDA();
    const StepMode& s = GetParam();
    const Tolerance tolerance = tolerance_for(s.math());
    const StepCapture expected = reference_run(s.variant);
    const StepCapture noise = reference_run(s.variant, tolerance.significand_bits);
    EXPECT_TRUE(harness::testing::conforms(cudnn_run(s), expected, tolerance, &noise));
}

INSTANTIATE_TEST_SUITE_P(
    Modes, CudnnStep,
    ::testing::Values(StepMode{"fp32_nchw", {}}, StepMode{"fp32_nhwc", {{"layout", "nhwc"}}},
                      StepMode{"fused_nhwc", {{"layout", "nhwc"}, {"fused_bn_relu", "true"}}},
                      StepMode{"graphs", {{"cuda_graphs", "true"}}},
                      StepMode{"graphs_host", {{"cuda_graphs", "true"}}, HB_PLACEMENT_HOST},
                      StepMode{"host_nhwc", {{"layout", "nhwc"}}, HB_PLACEMENT_HOST},
                      StepMode{"tensorflow", {}, HB_PLACEMENT_DEVICE, HB_RMSPROP_TENSORFLOW},
                      // cuDNN's legacy calls: the fallback where it declines the Ex batch norm.
                      StepMode{"legacy_calls",
                               {{"convolutions", "legacy"}, {"batchnorm", "legacy"}}},
                      StepMode{"legacy_calls_nhwc",
                               {{"convolutions", "legacy"},
                                {"batchnorm", "legacy"},
                                {"layout", "nhwc"},
                                {"fused_bn_relu", "true"}}},
                      StepMode{"tf32", {{"math", "tf32"}}}, StepMode{"bf16", {{"math", "bf16"}}},
                      StepMode{"bf16_nhwc_fused_graphs",
                               {{"math", "bf16"},
                                {"layout", "nhwc"},
                                {"fused_bn_relu", "true"},
                                {"cuda_graphs", "true"}},
                               HB_PLACEMENT_HOST}),
    [](const ::testing::TestParamInfo<StepMode>& mode) { return mode.param.name; });

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
