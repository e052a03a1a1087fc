// How a check's outcome is shown: the table and the JSON, whole steps and layer by layer.
#include "check/check_json_reporter.hpp"
#include "check/check_table_reporter.hpp"
#include "check/comparison.hpp"
#include "check/layer_check.hpp"
#include "config/config.hpp"
#include "harness_process.hpp"
#include "hb/manifest.hpp"
#include "model/hourglass.hpp"
#include "model/layer_units.hpp"
#include "output/csv_reader.hpp"
#include "step_capture_sample.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <limits>
#include <ostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace {

using harness::check::compare;
using harness::check::StepCapture;
using harness::check::tolerance_for;
using harness::testing::run_harness;
using harness::testing::sample_capture;
using harness::testing::TempDir;

harness::check::CheckOutcome sample_outcome() {
    namespace hc = harness::check;
    hc::CheckOutcome outcome;
    outcome.baseline.status = harness::output::Status::ok;
    outcome.baseline.losses = {1.25, 1.125};
    hc::BackendCheck passed, skipped;
    passed.run.backend = "onednn";
    passed.run.device = "cpu";
    passed.run.math = hb::Math::fp32;
    passed.run.status = harness::output::Status::ok;
    passed.comparison = compare(sample_capture(), sample_capture(), tolerance_for(hb::Math::fp32));
    skipped.run.backend = "cudnn";
    skipped.run.device = "cuda:0";
    skipped.run.math = hb::Math::fp32;
    skipped.run.status = harness::output::Status::skipped;
    skipped.run.message = "no CUDA device";
    outcome.checks = {passed, skipped};
    return outcome;
}

harness::check::CheckRequest sample_request() {
    harness::check::CheckRequest request;
    request.config_path = "configs/check.yaml";
    return request;
}

TEST(CheckReporters, TheTableAndTheJsonShowEveryBackendWithItsVerdict) {
    std::ostringstream table, json;
    harness::check::CheckTableReporter(table).report(sample_request(), sample_outcome());
    harness::check::CheckJsonReporter(json).report(sample_request(), sample_outcome());

    const std::string t = table.str();
    EXPECT_EQ(t.rfind("check configs/check.yaml: baseline reference-fp64, 2 steps\n", 0), 0u) << t;
    EXPECT_NE(t.find("onednn           cpu     fp32  PASS"), std::string::npos) << t;
    EXPECT_NE(t.find("cudnn            cuda:0  fp32  SKIPPED   no CUDA device"), std::string::npos)
        << t;
    const auto j = nlohmann::json::parse(json.str());
    ASSERT_EQ(j.at("backends").size(), 2u);
    EXPECT_EQ(j["backends"][0]["verdict"], "PASS");
    EXPECT_EQ(j["backends"][0]["differences"].size(), 7u);
    EXPECT_EQ(j["backends"][1]["verdict"], "SKIPPED");
    EXPECT_FALSE(j["backends"][1].contains("differences"));
    EXPECT_EQ(j["baseline"]["losses"], nlohmann::json({1.25, 1.125}));
}

// Where the first members did not hold a backend, the table says how many it took, or that it is
// out of bounds against all of them, and names each quantity within tolerance of a member's value
// rather than the baseline's; the JSON has both.
TEST(CheckReporters, TheTableSaysHowManyMembersTheVerdictTook) {
    auto outcome = sample_outcome();
    outcome.checks.resize(1);
    auto& cmp = outcome.checks[0].comparison;
    cmp.members = 9;
    cmp.differences[1].relative = 2 * cmp.differences[1].tolerance;
    cmp.differences[1].member = 9;
    cmp.differences[1].member_relative = 0.5 * cmp.differences[1].tolerance;
    std::ostringstream table, json;
    harness::check::CheckTableReporter(table).report(sample_request(), outcome);
    harness::check::CheckJsonReporter(json).report(sample_request(), outcome);
    const std::string t = table.str();
    EXPECT_NE(t.find("    ensemble: 9 members (the first 8 left a quantity out of bounds)\n"),
              std::string::npos)
        << t;
    EXPECT_NE(t.find("    " + cmp.differences[1].quantity + ": "), std::string::npos) << t;
    EXPECT_NE(t.find(" from member 9's (a decision within rounding that member took)\n"),
              std::string::npos)
        << t;
    const auto j = nlohmann::json::parse(json.str());
    EXPECT_EQ(j["backends"][0]["ensemble_members"], 9);
    EXPECT_EQ(j["backends"][0]["differences"][1]["member"], 9);
    EXPECT_FALSE(j["backends"][0]["differences"][0].contains("member"));

    cmp.members = 24;
    cmp.pass = false;
    outcome.checks[0].run.status = harness::output::Status::mismatch;
    std::ostringstream failed;
    harness::check::CheckTableReporter(failed).report(sample_request(), outcome);
    EXPECT_NE(failed.str().find("    ensemble: out of bounds against all 24 members\n"),
              std::string::npos)
        << failed.str();

    cmp.members = 6;
    std::ostringstream first;
    harness::check::CheckTableReporter(first).report(sample_request(), outcome);
    EXPECT_EQ(first.str().find("ensemble:"), std::string::npos) << first.str();
}

// The bounds line names each kind of quantity once, each later step's gradients apart from step
// 1's and every loss together.
TEST(CheckReporters, TheBoundsLineHoldsEachStepsGradientsApart) {
    auto capture = sample_capture();
    capture.anchored = capture.anchored_baseline = std::make_shared<harness::check::LaterGradients>(
        harness::check::LaterGradients{capture.gradients});
    auto outcome = sample_outcome();
    outcome.checks[0].comparison = compare(capture, capture, tolerance_for(hb::Math::fp32));
    std::ostringstream table;
    harness::check::CheckTableReporter(table).report(sample_request(), outcome);
    const std::string t = table.str();
    EXPECT_NE(t.find("bounds (relative): loss 0.0001, gradient 0.002, gradient[2] 0.002, state "),
              std::string::npos)
        << t;
}

TEST(CheckReporters, TheTablesBackendColumnFitsTheLongestName) {
    auto outcome = sample_outcome();
    outcome.checks[1].run.backend = "tensorflow-fused-device";
    std::ostringstream table;
    harness::check::CheckTableReporter(table).report(sample_request(), outcome);
    const std::string t = table.str();
    EXPECT_NE(t.find("backend                 device  math"), std::string::npos) << t;
    EXPECT_NE(t.find("onednn                  cpu     fp32  PASS"), std::string::npos) << t;
    EXPECT_NE(t.find("tensorflow-fused-device cuda:0  fp32  SKIPPED"), std::string::npos) << t;
}

TEST(CheckReporters, ABaselineThatFailedIsAllTheyShow) {
    auto outcome = sample_outcome();
    outcome.baseline_problem = "the baseline is too big";
    std::ostringstream table, json;
    harness::check::CheckTableReporter(table).report(sample_request(), outcome);
    harness::check::CheckJsonReporter(json).report(sample_request(), outcome);
    EXPECT_EQ(table.str(),
              "check configs/check.yaml: baseline reference-fp64, 2 steps\n"
              "baseline failed: the baseline is too big\n");
    EXPECT_EQ(nlohmann::json::parse(json.str())["baseline_problem"], "the baseline is too big");
}

// Two configurations of the check network: a convolution whose onednn check mismatched in a
// gradient, and a batch norm whose onednn check passed; cudnn skipped in both.
harness::check::LayerCheckOutcome sample_layer_outcome() {
    namespace hc = harness::check;
    hc::LayerCheckOutcome outcome;
    outcome.layers = "conv3x3|batchnorm";
    hc::UnitCheck& conv = outcome.units.emplace_back();
    conv.unit.name = "conv3x3/s1/c16-16/8x8";
    conv.unit.kind = "conv2d";
    conv.unit.occurrences = {"a", "b", "c"};
    conv.outcome = sample_outcome();
    StepCapture off = sample_capture();
    off.gradients["conv.weight"][0] *= 1.01f;
    auto& mismatched = conv.outcome.checks[0];
    mismatched.comparison =
        compare(off, sample_capture(), harness::check::layer_tolerance_for(hb::Math::fp32));
    mismatched.run.status = harness::output::Status::mismatch;
    hc::UnitCheck& bn = outcome.units.emplace_back();
    bn.unit.name = "batchnorm+relu/c16/8x8";
    bn.unit.kind = "batchnorm+relu";
    bn.unit.occurrences = {"d"};
    bn.outcome = sample_outcome();
    return outcome;
}

TEST(LayerCheck, ConfigurationsAreSelectedByRegexAndABadOneIsRefusedNamingTheOption) {
    using harness::check::select_units;
    const auto config =
        harness::config::load_config(std::string(HB_SOURCE_DIR) + "/configs/check.yaml");
    const auto units = harness::model::layer_units(harness::model::build_hourglass(config.model));
    EXPECT_EQ(select_units(units, "").size(), units.size());
    const auto convs = select_units(units, "^conv3x3");
    ASSERT_FALSE(convs.empty());
    for (int i : convs) EXPECT_EQ(units[static_cast<size_t>(i)].name.rfind("conv3x3", 0), 0u);
    EXPECT_EQ(select_units(units, "relu/c16/8x8$").size(), 1u);
    for (const std::string bad : {"(", "[a-", "nosuchlayer"}) {
        try {
            select_units(units, bad);
            ADD_FAILURE() << bad << " was accepted";
        } catch (const std::invalid_argument& e) {
            EXPECT_EQ(std::string(e.what()).rfind("--layers: ", 0), 0u) << e.what();
        }
    }
}

TEST(LayerCheck, TheSummaryHoldsEachKindsWorstPerBackend) {
    const auto summaries = harness::check::summarize_by_kind(sample_layer_outcome());
    ASSERT_EQ(summaries.size(), 4u);  // two kinds, two backends
    EXPECT_EQ(summaries[0].kind, "conv2d");
    EXPECT_EQ(summaries[0].backend, "onednn");
    EXPECT_EQ(summaries[0].failed, 1);
    EXPECT_EQ(summaries[0].worst.quantity, "gradient conv.weight");
    EXPECT_EQ(summaries[0].worst_configuration, "conv3x3/s1/c16-16/8x8");
    EXPECT_EQ(summaries[1].backend, "cudnn");
    EXPECT_EQ(summaries[1].skipped, 1);
    EXPECT_EQ(summaries[2].kind, "batchnorm+relu");
    EXPECT_EQ(summaries[2].failed, 0);
    EXPECT_EQ(summaries[2].configurations, 1);
}

TEST(CheckReporters, LayerByLayerShowsEachConfigurationAndTheWorstByKind) {
    std::ostringstream table, json;
    harness::check::CheckTableReporter(table).report_layers(sample_request(),
                                                            sample_layer_outcome());
    harness::check::CheckJsonReporter(json).report_layers(sample_request(), sample_layer_outcome());
    const std::string t = table.str();
    EXPECT_NE(t.find("conv3x3/s1/c16-16/8x8      3  MISMATCH"), std::string::npos) << t;
    EXPECT_NE(t.find("batchnorm+relu/c16/8x8     1  PASS"), std::string::npos) << t;
    EXPECT_NE(t.find("    onednn: gradient conv.weight"), std::string::npos) << t;
    EXPECT_NE(t.find("cudnn skipped: no CUDA device"), std::string::npos) << t;
    EXPECT_NE(t.find("worst by layer kind"), std::string::npos) << t;
    EXPECT_NE(t.find("1 of 1 fail"), std::string::npos) << t;

    const auto j = nlohmann::json::parse(json.str());
    EXPECT_EQ(j.at("layers"), "conv3x3|batchnorm");
    ASSERT_EQ(j.at("configurations").size(), 2u);
    const auto& conv = j["configurations"][0];
    EXPECT_EQ(conv.at("name"), "conv3x3/s1/c16-16/8x8");
    EXPECT_EQ(conv.at("count"), 3);
    EXPECT_EQ(conv.at("backends")[0].at("verdict"), "MISMATCH");
    EXPECT_EQ(conv.at("backends")[1].at("verdict"), "SKIPPED");
    ASSERT_EQ(j.at("summary").size(), 4u);
    EXPECT_EQ(j["summary"][0].at("kind"), "conv2d");
    EXPECT_EQ(j["summary"][0].at("failed"), 1);
    EXPECT_EQ(j["summary"][0].at("worst_relative").at("quantity"), "gradient conv.weight");
}

}  // namespace
