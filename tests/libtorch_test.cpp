// The LibTorch backend through its C ABI, loaded with dlopen exactly as the harness loads it (so
// LibTorch's libstdc++ ABI never meets this program's), against the reference backend on a small
// stacked hourglass. CUDA cases run only where LibTorch sees a GPU and say so when skipped.
//
// The semantics are checked in float64 (the plugin's `math: fp64` against the reference's,
// the oracle of `harness check`): two independent float64 implementations of the step, each the
// other's test, agree in every loss, gradient and tensor to 1e-9 of its scale beyond the
// read-back's rounding to float32 (measured: the losses and step 1's gradients to about 1e-12,
// what the torch variant's first update moves, lr * sign(g) * 10 with v = 0, to 4e-10). In
// float32 two
// effects make tensor-by-tensor agreement a matter of luck, for any pair of implementations: a ReLU
// whose input lies within rounding error of zero passes or blocks its gradient depending on the
// last bit, which moves the gradients upstream of it by up to a few percent; and RMSProp's first
// torch-variant step, with v = 0, moves each parameter by lr * sign(g) * 10 however small |g| is,
// so the rounding noise in the gradients of conv biases that feed a batch norm (zero in exact
// arithmetic) becomes a parameter difference of order lr. The float32 path is therefore compared
// with the tolerances those effects leave, and its optimizer by replaying the reference's update
// on the plugin's own gradients.
#include "libtorch_session.hpp"

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace libtorch_test;

// --------------------------------------------------------------------------------- description

TEST(LibTorchPlugin, DescribesItselfWithTheCpuAndACudaEntry) {
    const hb_plugin_info& info = plugin_info();
    EXPECT_STREQ(info.name, "libtorch");
    EXPECT_STREQ(info.version, "1.0.0");
    EXPECT_EQ(HB_API_MAJOR(plugin_api().api_version), HB_API_VERSION_MAJOR);
    ASSERT_GE(info.num_libraries, 1);
    EXPECT_STREQ(info.libraries[0].name, "LibTorch");
    ASSERT_GE(info.num_devices, 2);
    EXPECT_STREQ(info.devices[0].name, "cpu");
    EXPECT_EQ(info.devices[0].available, 1);
    EXPECT_STREQ(info.devices[1].name, "cuda:0");
    if (!info.devices[1].available) {
        ASSERT_NE(info.devices[1].unavailable_reason, nullptr);
        EXPECT_GT(std::string(info.devices[1].unavailable_reason).size(), 10u);
    }
}

TEST(LibTorchPlugin, ACudaDeviceWithoutCudaIsUnavailableWithTheReason) {
    const std::string reason = harness::testing::unavailable_reason(plugin_api(), "cuda:0");
    if (reason.empty()) GTEST_SKIP() << "CUDA is available here; nothing to refuse";
    SessionSetup setup;
    setup.device = "cuda:0";
    PluginSession session(setup);
    EXPECT_EQ(session.status(), HB_UNAVAILABLE);
    EXPECT_NE(session.error().find(reason), std::string::npos) << session.error();
}

TEST(LibTorchPlugin, RejectsUnknownAndCudaOnlyOptionsOnTheCpu) {
    for (const auto& option :
         std::vector<std::pair<std::string, std::string>>{{"thread", "2"},
                                                          {"cuda_graphs", "true"},
                                                          {"math", "tf32"},
                                                          {"layout", "2"},
                                                          {"math", "fp16"}}) {
        SessionSetup setup;
        setup.options = {option};
        PluginSession session(setup);
        EXPECT_EQ(session.status(), HB_UNSUPPORTED) << option.first;
        EXPECT_NE(session.error().find(option.first), std::string::npos) << session.error();
    }
    SessionSetup setup;
    setup.device = "tpu";
    EXPECT_EQ(PluginSession(setup).status(), HB_UNAVAILABLE);
}

TEST(LibTorchPlugin, ReportsItsManifestAndPeakMemory) {
    SessionSetup setup;
    setup.options = {{"threads", "2"}, {"layout", "nhwc"}};
    PluginSession session(setup);
    ASSERT_EQ(session.status(), HB_OK) << session.error();
    const std::string manifest = session.manifest_json();
    EXPECT_NE(manifest.find("\"math\": \"fp32\""), std::string::npos) << manifest;
    EXPECT_NE(manifest.find("\"threads\": 2"), std::string::npos) << manifest;
    EXPECT_NE(manifest.find("channels_last"), std::string::npos) << manifest;
    EXPECT_GT(session.peak_memory_bytes(), 0u);
}

TEST(LibTorchPlugin, AStepBeforeTheStateIsLoadedFailsWithAMessage) {
    PluginSession session(SessionSetup{});
    ASSERT_EQ(session.status(), HB_OK) << session.error();
    hb_step_result r{};
    EXPECT_EQ(plugin_api().step(session.get(), 0, &r), HB_ERROR);
    EXPECT_NE(std::string(plugin_api().session_error(session.get())).find("load_state"),
              std::string::npos);
}

// ----------------------------------------------------------------------- exact semantics (fp64)

struct ExactCase {
    const char* name;
    hb_optimizer optimizer;
    bool channels_last;
    bool smooth_square_averages;
};
// How CTest and failure messages show a case (GoogleTest would print its bytes).
void PrintTo(const ExactCase& c, std::ostream* out) {
    *out << c.name;
}

class LibTorchFp64 : public ::testing::TestWithParam<ExactCase> {};

TEST_P(LibTorchFp64, TwoStepsEqualTheReferenceInDouble) {
    SessionSetup setup = cpu_setup(GetParam().optimizer, GetParam().channels_last);
    setup.problem = &tiny_problem();
    setup.options.emplace_back("math", "fp64");
    if (GetParam().smooth_square_averages)
        setup.square_averages = smooth_square_averages(*setup.problem);
    const TrainingRun torch = run_plugin(setup, 2);
    const TrainingRun reference = run_reference_fp64(setup, 2);
    EXPECT_TRUE(agree_in_double(setup.problem->graph, torch, reference, 1e-9));
}

INSTANTIATE_TEST_SUITE_P(
    Semantics, LibTorchFp64,
    ::testing::Values(
        ExactCase{"torch_nchw", rmsprop(HB_RMSPROP_TORCH), false, false},
        ExactCase{"torch_channels_last", rmsprop(HB_RMSPROP_TORCH), true, false},
        ExactCase{"tensorflow_nchw", rmsprop(HB_RMSPROP_TENSORFLOW), false, false},
        ExactCase{"tensorflow_channels_last", rmsprop(HB_RMSPROP_TENSORFLOW), true, false},
        ExactCase{"torch_momentum_decay", rmsprop(HB_RMSPROP_TORCH, 0.9f, 1e-4f), false, false},
        ExactCase{"tensorflow_momentum_decay", rmsprop(HB_RMSPROP_TENSORFLOW, 0.9f, 1e-4f), true,
                  false},
        ExactCase{"torch_loaded_square_averages", rmsprop(HB_RMSPROP_TORCH), false, true}),
    [](const ::testing::TestParamInfo<ExactCase>& c) { return c.param.name; });

// -------------------------------------------------------------------- float32, what is timed

class LibTorchFp32 : public ::testing::TestWithParam<bool> {};

TEST_P(LibTorchFp32, TwoStepsAgreeWithTheReferenceInFloat) {
    for (hb_rmsprop_variant variant : {HB_RMSPROP_TORCH, HB_RMSPROP_TENSORFLOW}) {
        SCOPED_TRACE(variant == HB_RMSPROP_TORCH ? "torch variant" : "tensorflow variant");
        SessionSetup setup = cpu_setup(rmsprop(variant), GetParam());
        setup.square_averages = smooth_square_averages(*setup.problem);
        const TrainingRun torch = run_plugin(setup, 2);
        const TrainingRun reference = run_reference(setup, 2);
        expect_fp32_agreement(setup, torch, reference);
    }
}

INSTANTIATE_TEST_SUITE_P(Memory, LibTorchFp32, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& layout) {
                             return layout.param ? "channels_last" : "nchw";
                         });

struct OptimizerCase {
    const char* name;
    hb_optimizer optimizer;
};
// How CTest and failure messages show a case (GoogleTest would print its bytes).
void PrintTo(const OptimizerCase& c, std::ostream* out) {
    *out << c.name;
}

class LibTorchOptimizer : public ::testing::TestWithParam<OptimizerCase> {};

TEST_P(LibTorchOptimizer, UpdatesFollowTheReferenceRuleOnItsOwnGradients) {
    for (const char* foreach : {"false", "true"}) {
        SCOPED_TRACE(std::string("foreach ") + foreach);
        SessionSetup setup = cpu_setup(GetParam().optimizer, false);
        setup.options.emplace_back("foreach", foreach);
        expect_optimizer_follows_the_reference(setup, run_plugin(setup, 2), 1e-5);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Rmsprop, LibTorchOptimizer,
    ::testing::Values(OptimizerCase{"torch", rmsprop(HB_RMSPROP_TORCH)},
                      OptimizerCase{"tensorflow", rmsprop(HB_RMSPROP_TENSORFLOW)},
                      OptimizerCase{"torch_momentum_decay", rmsprop(HB_RMSPROP_TORCH, 0.9f, 1e-4f)},
                      OptimizerCase{"tensorflow_momentum_decay",
                                    rmsprop(HB_RMSPROP_TENSORFLOW, 0.9f, 1e-4f)}),
    [](const ::testing::TestParamInfo<OptimizerCase>& c) { return c.param.name; });

TEST(LibTorchPlugin, HostPlacementComputesTheSameSteps) {
    SessionSetup setup = cpu_setup(rmsprop(HB_RMSPROP_TORCH), false);
    const TrainingRun device = run_plugin(setup, 2);
    setup.placement = HB_PLACEMENT_HOST;
    const TrainingRun host = run_plugin(setup, 2);
    EXPECT_EQ(device.losses, host.losses);
    EXPECT_TRUE(device.states == host.states);
}

// ------------------------------------------------------------------------------------- CUDA

// The semantics in float64: losses to 1e-9, every gradient and every tensor to 1e-6 after the
// read-back's rounding to float32 (a gradient against at least 1e-3 of the largest).
const harness::check::Tolerance kFp64 =
    harness::testing::tight_tolerance("float64 semantics", 1e-9, 1e-6, 1e-6, 1e-3);

TEST(LibTorchCuda, Fp64StepsEqualTheReferenceInDouble) {
    SKIP_WITHOUT_CUDA();
    for (const char* layout : {"nchw", "nhwc"}) {
        SCOPED_TRACE(std::string("layout ") + layout);
        SessionSetup setup = cuda_setup({{"layout", layout}, {"math", "fp64"}});
        setup.problem = &tiny_problem();
        setup.optimizer = rmsprop(HB_RMSPROP_TENSORFLOW, 0.9f, 1e-4f);
        const TrainingRun torch = run_plugin(setup, 2);
        const TrainingRun reference = run_reference_fp64(setup, 2);
        EXPECT_TRUE(steps_agree(setup.problem->graph, torch, reference, 2, 2, kFp64));
    }
}

TEST(LibTorchCuda, Fp32StepsAgreeWithTheReferenceInFloat) {
    SKIP_WITHOUT_CUDA();
    for (const char* layout : {"nchw", "nhwc"}) {
        SCOPED_TRACE(std::string("layout ") + layout);
        SessionSetup setup = cuda_setup({{"layout", layout}});
        setup.square_averages = smooth_square_averages(*setup.problem);
        const TrainingRun torch = run_plugin(setup, 2);
        const TrainingRun reference = run_reference(setup, 2);
        expect_fp32_agreement(setup, torch, reference);
    }
}

TEST(LibTorchCuda, UpdatesFollowTheReferenceRuleOnItsOwnGradients) {
    SKIP_WITHOUT_CUDA();
    for (hb_rmsprop_variant variant : {HB_RMSPROP_TORCH, HB_RMSPROP_TENSORFLOW}) {
        SessionSetup setup = cuda_setup({});
        setup.optimizer = rmsprop(variant, 0.9f, 1e-4f);
        expect_optimizer_follows_the_reference(setup, run_plugin(setup, 2), 1e-5);
    }
}

TEST(LibTorchCuda, ACapturedStepGraphTrainsLikeEagerSteps) {
    SKIP_WITHOUT_CUDA();
    // Step 1 runs eagerly, step 2 is captured and replayed, steps 3 and 4 are replays; each
    // replay must refresh the gradients, the update and the loss.
    for (hb_placement placement : {HB_PLACEMENT_DEVICE, HB_PLACEMENT_HOST}) {
        SessionSetup setup = cuda_setup({{"cuda_graphs", "true"}, {"cudnn_benchmark", "false"}});
        setup.placement = placement;
        setup.square_averages = smooth_square_averages(*setup.problem);
        const TrainingRun graph = run_plugin(setup, 4);
        expect_optimizer_follows_the_reference(setup, graph, 1e-5);
        SessionSetup eager = setup;
        eager.options = {{"cudnn_benchmark", "false"}};
        EXPECT_TRUE(losses_agree(graph, run_plugin(eager, 4), 1e-3));
    }
}

TEST(LibTorchCuda, PhaseTimesAndPeakMemoryAreMeasured) {
    SKIP_WITHOUT_CUDA();
    // Eager steps, then a captured graph's replays: the phase events must be recorded in both.
    for (const char* graphs : {"false", "true"}) {
        SCOPED_TRACE(std::string("cuda_graphs ") + graphs);
        const TrainingRun run = run_plugin(cuda_setup({{"cuda_graphs", graphs}}), 4);
        for (const hb::StepResult& r : run.steps) {
            EXPECT_GT(r.forward_ms, 0);
            EXPECT_GT(r.backward_ms, 0);
            EXPECT_GT(r.optimizer_ms, 0);
        }
        EXPECT_GT(run.peak_memory, 0u);
    }
}

TEST(LibTorchCuda, Tf32IsLabelledInTheManifest) {
    SKIP_WITHOUT_CUDA();
    PluginSession session(cuda_setup({{"math", "tf32"}}));
    ASSERT_EQ(session.status(), HB_OK) << session.error();
    const std::string manifest = session.manifest_json();
    EXPECT_NE(manifest.find("\"math\": \"tf32\""), std::string::npos) << manifest;
}

}  // namespace
