// The gradient of the cuDNN plugin's input batch on request (ABI 2.3): the reference backend's,
// within the mode's tolerance, and none where a session was not asked for it.
#include "backend_comparison.hpp"
#include "check/check_runner.hpp"
#include "cudnn_gpu_session.hpp"
#include "session.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace cudnn_test;
using harness::check::StepCapture;
using harness::check::Tolerance;
using harness::check::tolerance_for;
using harness::testing::rmsprop;

// The reference's gradient of the loss with respect to batch 0 after one step from the start, as
// `harness check` captures it, with the reference's options `settings`: float64 (the oracle) or a
// rounding seed (an ensemble member).
StepCapture reference_input_gradient(const std::map<std::string, std::string>& settings) {
    const hb_optimizer o = rmsprop(HB_RMSPROP_TORCH);
    std::vector<hb_option> options;
    StepMode plain;
    plain.options = {{"threads", "4"}};
    for (const auto& kv : settings) plain.options.push_back(kv);
    hb_session_desc desc = describe_session(plain, o, options, "cpu");
    desc.input_gradient = 1;
    const std::unique_ptr<hb::Session> session = hb_reference::make_session(desc);
    const auto& p = problem();
    session->load_state(harness::testing::pointers(p.state).data());
    set_problem_batches(*session);
    session->step(0);
    StepCapture c;
    c.input_gradient.resize(p.batches.inputs[0].size());
    session->read_input_gradient(c.input_gradient.data());
    return c;
}

StepCapture read_input_gradient(harness::testing::AbiSession& session) {
    StepCapture c;
    c.input_gradient.resize(problem().batches.inputs[0].size());
    check_call(session, "read_input_gradient",
               plugin_api().read_input_gradient(session.get(), c.input_gradient.data()));
    return c;
}

class CudnnInputGradient : public ::testing::TestWithParam<StepMode> {};

// Asked for it, each step computes the gradient of its input batch, read back as NCHW float32
// within the mode's tolerance of the reference's: after steps from the start (eager, then, with
// cuda_graphs, captured and replayed) and, where the mode splits a step, after a forward_backward,
// whose update leaves it as it was.
TEST_P(CudnnInputGradient, MatchesTheReference) {
    SKIP_WITHOUT_CUDA();
    const StepMode& s = GetParam();
    const hb_optimizer o = rmsprop(s.variant);
    std::vector<hb_option> options;
    hb_session_desc desc = describe_session(s, o, options, "cuda:0");
    desc.input_gradient = 1;
    harness::testing::AbiSession session(plugin_api(), desc);
    ASSERT_EQ(session.status(), HB_OK) << session.error();
    const auto& p = problem();
    set_problem_batches(session);
    const Tolerance tolerance = tolerance_for(s.math());
    const StepCapture expected = reference_input_gradient({{"math", "fp64"}});
    std::vector<StepCapture> ensemble;
    for (int m = 0; m < harness::check::kFirstMembers; ++m)
        ensemble.push_back(reference_input_gradient(
            harness::check::ensemble_member_options(m, tolerance.significand_bits)));
    // The gradient of a step is its forward's and backward's, which neither the optimizer state
    // nor the running statistics change: every step from the start state computes the same one.
    for (int k = 1; k <= 3; ++k) {
        session.load_state(harness::testing::pointers(p.state).data());
        session.step(0);
        EXPECT_TRUE(harness::testing::conforms(read_input_gradient(session), expected, tolerance,
                                               &ensemble))
            << "step " << k;
    }
    const std::string manifest = session.manifest_json();
    EXPECT_NE(manifest.find("\"input_gradient\": true"), std::string::npos) << manifest;

    const bool graphs = std::find(s.options.begin(), s.options.end(),
                                  std::make_pair(std::string("cuda_graphs"),
                                                 std::string("true"))) != s.options.end();
    if (graphs) return;  // a captured step does not split
    session.load_state(harness::testing::pointers(p.state).data());
    forward_backward(session, 0);
    const StepCapture half = read_input_gradient(session);
    EXPECT_TRUE(harness::testing::conforms(half, expected, tolerance, &ensemble))
        << "forward_backward";
    apply_update(session);
    EXPECT_TRUE(same_bits(read_input_gradient(session).input_gradient, half.input_gradient))
        << "the update changed the input's gradient";
}

// The graph API and cuDNN's legacy calls, in each layout, with the batch on the host or the
// device, captured, and in bf16.
INSTANTIATE_TEST_SUITE_P(
    Modes, CudnnInputGradient,
    ::testing::Values(StepMode{"fp32_nchw", {}},
                      StepMode{"legacy_calls_nhwc",
                               {{"convolution_api", "legacy"},
                                {"batchnorm_api", "legacy"},
                                {"layout", "nhwc"},
                                {"fuse_batchnorm_relu", "true"}}},
                      StepMode{"legacy_calls", {{"convolution_api", "legacy"}}},
                      StepMode{"graphs", {{"cuda_graphs", "true"}}},
                      StepMode{"host_nhwc_fused",
                               {{"layout", "nhwc"}, {"fuse_batchnorm_relu", "true"}},
                               HB_PLACEMENT_HOST},
                      StepMode{"bf16", {{"math", "bf16"}}},
                      StepMode{"bf16_nhwc_fused_graphs",
                               {{"math", "bf16"},
                                {"layout", "nhwc"},
                                {"fuse_batchnorm_relu", "true"},
                                {"cuda_graphs", "true"}},
                               HB_PLACEMENT_HOST}),
    [](const ::testing::TestParamInfo<StepMode>& mode) { return mode.param.name; });

// Not asked for it, a session computes no input gradient, holds no memory for it, and refuses to
// read one, saying why; asked, it reads one after a step only.
TEST(CudnnPlugin, ReadsTheInputGradientOnlyWhenAskedFor) {
    SKIP_WITHOUT_CUDA();
    const hb_optimizer o = rmsprop(HB_RMSPROP_TORCH);
    const auto& p = problem();
    uint64_t memory[2] = {0, 0};
    for (const bool asked : {false, true}) {
        std::vector<hb_option> options;
        hb_session_desc desc = describe_session(StepMode{}, o, options, "cuda:0");
        desc.input_gradient = asked ? 1 : 0;
        harness::testing::AbiSession session(plugin_api(), desc);
        ASSERT_EQ(session.status(), HB_OK) << session.error();
        session.load_state(harness::testing::pointers(p.state).data());
        set_problem_batches(session);
        std::vector<float> gradient(p.batches.inputs[0].size());
        EXPECT_NE(plugin_api().read_input_gradient(session.get(), gradient.data()), HB_OK)
            << "no step has run";
        EXPECT_GT(session.step(0).loss, 0);
        const hb_status status = plugin_api().read_input_gradient(session.get(), gradient.data());
        const std::string message = plugin_api().session_error(session.get());
        if (asked) {
            EXPECT_EQ(status, HB_OK) << message;
        } else {
            EXPECT_EQ(status, HB_UNSUPPORTED);
            EXPECT_NE(message.find("input_gradient"), std::string::npos) << message;
        }
        const std::string manifest = session.manifest_json();
        EXPECT_NE(manifest.find(std::string("\"input_gradient\": ") + (asked ? "true" : "false")),
                  std::string::npos)
            << manifest;
        memory[asked ? 1 : 0] = session.peak_memory_bytes();
    }
    EXPECT_LT(memory[0], memory[1]) << "the input's gradient has a buffer of its own";
}

}  // namespace
