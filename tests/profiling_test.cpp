// Profiling from the host side: how events are named and counted, and `harness run --trace` /
// `harness report --by` over plugins that profile, cannot, or fail.
#include "run/profiling.hpp"
#include "harness_process.hpp"
#include "model/hourglass.hpp"
#include "output/run_json.hpp"
#include "test_paths.hpp"
#include "trace_check.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace {

using harness::model::Layer;
using harness::model::LayerKind;
using harness::run::operation_kind;
using harness::testing::fake_plugins_env;
using harness::testing::read_json;
using harness::testing::run_harness;
using harness::testing::TempDir;

const std::string kConfig = std::string(HB_TEST_DATA_DIR) + "/profiled.yaml";

Layer layer(LayerKind kind) {
    Layer l;
    l.kind = kind;
    return l;
}

TEST(OperationKind, ConvolutionsBySideTheRestByLayerOrPhase) {
    const Layer conv = layer(LayerKind::conv2d), bn = layer(LayerKind::batchnorm);
    EXPECT_EQ(operation_kind(&conv, HB_PHASE_FORWARD), "convolution forward");
    EXPECT_EQ(operation_kind(&conv, HB_PHASE_BACKWARD_DATA), "convolution backward-data");
    EXPECT_EQ(operation_kind(&conv, HB_PHASE_BACKWARD_WEIGHTS), "convolution backward-weights");
    EXPECT_EQ(operation_kind(&conv, HB_PHASE_BACKWARD), "convolution backward (data and weights)");
    EXPECT_EQ(operation_kind(&bn, HB_PHASE_BACKWARD), "batch norm");
    const Layer relu = layer(LayerKind::relu), add = layer(LayerKind::add);
    EXPECT_EQ(operation_kind(&relu, HB_PHASE_FORWARD), "ReLU");
    EXPECT_EQ(operation_kind(&add, HB_PHASE_BACKWARD_DATA), "sums");
    // The phase decides for the optimizer, reorders, transfers and loss work, whatever the layer.
    EXPECT_EQ(operation_kind(&conv, HB_PHASE_UPDATE), "optimizer");
    EXPECT_EQ(operation_kind(&conv, HB_PHASE_REORDER), "reorders and copies");
    EXPECT_EQ(operation_kind(nullptr, HB_PHASE_TRANSFER), "transfers");
    EXPECT_EQ(operation_kind(nullptr, HB_PHASE_LOSS), "loss");
    EXPECT_EQ(operation_kind(nullptr, HB_PHASE_FORWARD), "other");
    for (const auto& kind : {"convolution forward", "batch norm", "optimizer", "other"})
        EXPECT_NE(std::find(harness::output::kOperationKinds.begin(),
                            harness::output::kOperationKinds.end(), kind),
                  harness::output::kOperationKinds.end());
}

TEST(OperationOf, NamesTheLayerAndRefusesOneOutsideTheGraph) {
    harness::model::HourglassSpec m;
    m.stacks = 1;
    m.features = 8;
    m.depth = 1;
    m.joints = 2;
    m.input_size = 16;
    m.batch = 2;
    const auto graph = harness::model::build_hourglass(m);
    hb_event e{"convolution", 0, HB_PHASE_FORWARD, nullptr, 1, 2};
    const auto op = harness::run::operation_of(e, graph);
    EXPECT_EQ(op.layer, graph.layers[0].name);
    EXPECT_EQ(op.track, "main");
    EXPECT_EQ(op.phase, "forward");
    e.layer = static_cast<int32_t>(graph.layers.size());
    EXPECT_THROW(harness::run::operation_of(e, graph), std::runtime_error);
}

// The roofline's points sum a layer kind's time over the operation kinds its work is counted under.
TEST(OperationKindsOf, ALayerKindsWorkInEveryComputingPhase) {
    EXPECT_EQ(harness::run::operation_kinds_of("conv2d"),
              (std::vector<std::string>{"convolution forward", "convolution backward-data",
                                        "convolution backward-weights",
                                        "convolution backward (data and weights)"}));
    EXPECT_EQ(harness::run::operation_kinds_of("batchnorm"),
              std::vector<std::string>{"batch norm"});
    EXPECT_EQ(harness::run::operation_kinds_of("mse_loss"), std::vector<std::string>{"loss"});
    EXPECT_EQ(harness::run::operation_kinds_of("rmsprop"), std::vector<std::string>{"optimizer"});
    EXPECT_EQ(harness::run::operation_kinds_of("softmax"), std::vector<std::string>{});
}

TEST(TracePath, KeepsFileNameCharactersOnly) {
    EXPECT_EQ(harness::run::trace_path("t", "cfg", "a b/c"), "t/cfg.a_b_c.json");
}

TEST(HarnessRunTrace, WritesAValidTracePerProfiledBackendAndTheProfilesToTheSidecar) {
    TempDir dir;
    const std::string csv = dir / "p.csv", traces = dir / "traces";
    auto r = run_harness(
        "run " + kConfig + " --output " + csv + " --trace " + traces + " --profile-steps 3",
        fake_plugins_env());
    EXPECT_EQ(r.exit_code, 1) << r.output;  // `throws` failed
    EXPECT_NE(r.output.find("profile of good: 3 steps"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("profile of unprofiled: none: plugin fake_unprofiled cannot profile"),
              std::string::npos)
        << r.output;

    const std::string good = harness::run::trace_path(traces, "profiled", "good");
    ASSERT_TRUE(std::filesystem::exists(good)) << r.output;
    const nlohmann::json trace = read_json(good);
    EXPECT_EQ(harness::testing::trace_problems(trace), std::vector<std::string>{});
    EXPECT_EQ(trace["metadata"]["config"], "profiled");
    int steps = 0;
    for (const auto& e : trace["traceEvents"])
        if (e.value("cat", "") == "step" && e["tid"] == 1) ++steps;
    EXPECT_EQ(steps, 3);
    EXPECT_FALSE(
        std::filesystem::exists(harness::run::trace_path(traces, "profiled", "unprofiled")));
    EXPECT_FALSE(std::filesystem::exists(harness::run::trace_path(traces, "profiled", "throws")));

    const nlohmann::json sidecar = read_json(dir / "p.json");
    std::map<std::string, harness::output::BackendRun> runs;
    for (const auto& j : sidecar["runs"]) {
        auto run = harness::output::backend_run_from_json(j);
        runs[run.backend] = run;
    }
    ASSERT_TRUE(runs["good"].profile);
    EXPECT_EQ(runs["good"].profile->steps, 3);
    EXPECT_GT(runs["good"].profile->kinds_ms.count("optimizer"), 0u);
    EXPECT_EQ(runs["good"].samples_ms.size(), 3u);  // profiled steps are not timed samples
    ASSERT_TRUE(runs["unprofiled"].profile);
    EXPECT_NE(runs["unprofiled"].profile->error.find("HB_CAP_PROFILE"), std::string::npos);
    EXPECT_EQ(runs["unprofiled"].status, harness::output::Status::ok);

    auto report = run_harness("report " + csv + " --by kind --by layer");
    EXPECT_EQ(report.exit_code, 0) << report.output;
    EXPECT_NE(report.output.find("## profiled: where the step goes, by operation kind"),
              std::string::npos)
        << report.output;
    EXPECT_NE(report.output.find("| optimizer |"), std::string::npos) << report.output;
    EXPECT_NE(report.output.find("## profiled: the layers whose times differ most"),
              std::string::npos)
        << report.output;
    EXPECT_NE(report.output.find("- profiled / unprofiled: plugin fake_unprofiled cannot profile"),
              std::string::npos)
        << report.output;
}

TEST(HarnessRunTrace, ProfileStepsAloneAskForAProfile) {
    TempDir dir;
    auto r = run_harness(
        "run " + kConfig + " --backends good --output " + (dir / "p.csv") + " --profile-steps 2",
        fake_plugins_env());
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("profile of good: 2 steps"), std::string::npos) << r.output;
}

TEST(HarnessRunTrace, AFolderThatCannotBeMadeIsRefusedBeforeAnythingRuns) {
    TempDir dir;
    std::ofstream(dir / "file") << "in the way\n";
    const std::string csv = dir / "p.csv";
    auto r = run_harness("run " + kConfig + " --output " + csv + " --trace " + (dir / "file"),
                         fake_plugins_env());
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("--trace"), std::string::npos) << r.output;
    EXPECT_FALSE(std::filesystem::exists(csv));
}

}  // namespace
