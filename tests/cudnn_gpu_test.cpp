// The cuDNN plugin's training step against the reference backend on the check network (losses,
// every gradient after the first step, parameters and running statistics after the second),
// judged as `harness check` judges it, in each layout, fusion, graph, placement and math mode.
#include "backend_comparison.hpp"
#include "check/check_runner.hpp"
#include "cudnn_gpu_session.hpp"
#include "session.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace cudnn_test;
using harness::check::StepCapture;
using harness::check::Tolerance;
using harness::check::tolerance_for;
using harness::testing::rmsprop;

// Two reference steps, as `harness check` captures them, with these options besides its threads
// (the oracle's precision, or a member of the rounding-noise ensemble).
StepCapture reference_run(hb_rmsprop_variant variant,
                          const std::map<std::string, std::string>& settings) {
    const hb_optimizer o = rmsprop(variant);
    std::vector<hb_option> options;
    StepMode plain;
    plain.variant = variant;
    plain.options = {{"threads", "4"}};
    for (const auto& kv : settings) plain.options.push_back(kv);
    const std::unique_ptr<hb::Session> session =
        hb_reference::make_session(describe_session(plain, o, options, "cpu"));
    const auto& p = problem();
    return harness::testing::capture_after(
        p.graph, harness::testing::run_steps(*session, {p.graph, p.state, p.batches}, 2), 2);
}

// The oracle's step and the rounding-noise ensemble at `bits`.
StepCapture oracle_run(hb_rmsprop_variant variant) {
    return reference_run(variant, {{"math", "fp64"}});
}
std::vector<StepCapture> ensemble_runs(hb_rmsprop_variant variant, int bits) {
    std::vector<StepCapture> members;
    for (int m = 0; m < harness::check::kFirstMembers; ++m)
        members.push_back(reference_run(variant, harness::check::ensemble_member_options(m, bits)));
    return members;
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
    EXPECT_NE(manifest.find("\"math\": \"" + std::string(hb::to_string(s.math())) + "\""),
              std::string::npos)
        << manifest;
    // bf16 normalises with the backend's own kernels; otherwise cuDNN's Ex calls, unless the
    // mode asks for the legacy ones.
    const bool legacy = std::find(s.options.begin(), s.options.end(),
                                  std::make_pair(std::string("batchnorm"),
                                                 std::string("legacy"))) != s.options.end();
    if (s.math() != hb::Math::bf16) {
        EXPECT_EQ(manifest.find("\"batchnorm_ex_layers\": 0,") != std::string::npos, legacy)
            << manifest;
    }
    return harness::testing::capture_after(p.graph, run, 2);
}

class CudnnStep : public ::testing::TestWithParam<StepMode> {};

// What `harness check` decides, in process: against the float64 oracle, the mode's tolerance or
// the rounding-noise ensemble's at the mode's precision.
TEST_P(CudnnStep, PassesTheCheckAgainstTheReference) {
    SKIP_WITHOUT_CUDA();
    const StepMode& s = GetParam();
    const Tolerance tolerance = tolerance_for(s.math());
    const StepCapture expected = oracle_run(s.variant);
    const std::vector<StepCapture> ensemble = ensemble_runs(s.variant, tolerance.significand_bits);
    EXPECT_TRUE(harness::testing::conforms(cudnn_run(s), expected, tolerance, &ensemble));
}

INSTANTIATE_TEST_SUITE_P(
    Modes, CudnnStep,
    ::testing::Values(StepMode{"fp32_nchw", {}}, StepMode{"fp32_nhwc", {{"layout", "nhwc"}}},
                      StepMode{"fused_nhwc", {{"layout", "nhwc"}, {"fuse_batchnorm_relu", "true"}}},
                      StepMode{"graphs", {{"cuda_graphs", "true"}}},
                      StepMode{"graphs_host", {{"cuda_graphs", "true"}}, HB_PLACEMENT_HOST},
                      StepMode{"host_nhwc", {{"layout", "nhwc"}}, HB_PLACEMENT_HOST},
                      StepMode{"tensorflow", {}, HB_PLACEMENT_DEVICE, HB_RMSPROP_TENSORFLOW},
                      // cuDNN's legacy calls: the fallback where it declines the Ex batch norm.
                      StepMode{"legacy_calls",
                               {{"convolution_api", "legacy"}, {"batchnorm_api", "legacy"}}},
                      StepMode{"legacy_calls_nhwc",
                               {{"convolution_api", "legacy"},
                                {"batchnorm_api", "legacy"},
                                {"layout", "nhwc"},
                                {"fuse_batchnorm_relu", "true"}}},
                      StepMode{"tf32", {{"math", "tf32"}}}, StepMode{"bf16", {{"math", "bf16"}}},
                      StepMode{"bf16_nhwc_fused_graphs",
                               {{"math", "bf16"},
                                {"layout", "nhwc"},
                                {"fuse_batchnorm_relu", "true"},
                                {"cuda_graphs", "true"}},
                               HB_PLACEMENT_HOST}),
    [](const ::testing::TestParamInfo<StepMode>& mode) { return mode.param.name; });

}  // namespace
