// Conformance: the comparison itself, how its outcome is shown, and `harness check` catching a
// backend that is off.
#include "check/check_json_reporter.hpp"
#include "check/check_table_reporter.hpp"
#include "check/comparison.hpp"
#include "check/layer_check.hpp"
#include "config/config.hpp"
#include "harness_process.hpp"
#include "hb/manifest.hpp"
#include "model/hourglass.hpp"
#include "model/layer_units.hpp"
#include "results/csv_reader.hpp"
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
using harness::testing::TempDir;

StepCapture sample_capture() {
    StepCapture c;
    c.losses = {1.25, 1.125};
    c.gradients["conv.weight"] = {0.5f, -0.25f, 0.125f, 1.0f};
    c.gradients["conv.bias"] = {1e-9f, -2e-9f};  // zero in exact arithmetic: only noise
    c.state["conv.weight"] = {0.1f, 0.2f, -0.3f, 0.4f};
    c.state["conv.bias"] = {0.01f, -0.02f};
    c.state["bn.running_var"] = {1.0f, 0.9f};
    return c;
}

TEST(Comparison, IdenticalCapturesPass) {
    auto c = sample_capture();
    auto result = compare(c, c, tolerance_for("fp32"));
    EXPECT_TRUE(result.pass);
    EXPECT_TRUE(result.problem.empty());
    EXPECT_EQ(result.differences.size(), 2u + 2u + 3u);
    EXPECT_EQ(result.worst_abs()->max_abs, 0.0);
}

TEST(Comparison, APerturbedGradientIsCaughtAndNamed) {
    auto baseline = sample_capture();
    auto candidate = baseline;
    candidate.gradients["conv.weight"][3] *= 1.01f;
    auto result = compare(candidate, baseline, tolerance_for("fp32"));
    EXPECT_FALSE(result.pass);
    EXPECT_EQ(result.worst_relative()->quantity, "gradient conv.weight");
    EXPECT_NEAR(result.worst_relative()->relative, 0.01, 1e-6);
}

TEST(Comparison, APerturbedLossIsCaught) {
    auto baseline = sample_capture();
    auto candidate = baseline;
    candidate.losses[1] *= 1.001;
    auto result = compare(candidate, baseline, tolerance_for("fp32"));
    EXPECT_FALSE(result.pass);
    EXPECT_EQ(result.worst_relative()->quantity, "loss[2]");
}

TEST(Comparison, APerturbedRunningStatisticIsCaught) {
    auto baseline = sample_capture();
    auto candidate = baseline;
    candidate.state["bn.running_var"][1] = 0.95f;
    auto result = compare(candidate, baseline, tolerance_for("fp32"));
    EXPECT_FALSE(result.pass);
    EXPECT_EQ(result.worst_relative()->quantity, "state bn.running_var");
}

TEST(Comparison, NoiseOnGradientsThatAreZeroInExactArithmeticPasses) {
    auto baseline = sample_capture();
    auto candidate = baseline;
    candidate.gradients["conv.bias"] = {-3e-9f, 1e-9f};  // other noise, other signs
    EXPECT_TRUE(compare(candidate, baseline, tolerance_for("fp32")).pass);
}

TEST(Comparison, ParametersWhoseUpdateDirectionIsUndeterminedAreLeftOut) {
    auto baseline = sample_capture();
    auto candidate = baseline;
    // RMSProp moved the noise-gradient biases by +-lr/sqrt(1-alpha) in opposite directions.
    candidate.state["conv.bias"] = {0.01f - 5e-3f, -0.02f + 5e-3f};
    auto result = compare(candidate, baseline, tolerance_for("fp32"));
    EXPECT_TRUE(result.pass);
    for (const auto& d : result.differences) {
        if (d.quantity == "state conv.bias") {
            EXPECT_EQ(d.undetermined, 2);
        }
    }

    // A parameter with a clear gradient must still agree.
    candidate.state["conv.weight"][0] += 5e-3f;
    EXPECT_FALSE(compare(candidate, baseline, tolerance_for("fp32")).pass);
}

TEST(Comparison, NonFiniteValuesNeverPass) {
    auto baseline = sample_capture();
    auto candidate = baseline;
    candidate.state["conv.weight"][0] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_FALSE(compare(candidate, baseline, tolerance_for("fp32")).pass);
    candidate = baseline;
    candidate.state["conv.bias"][0] = std::numeric_limits<float>::infinity();  // undetermined
    EXPECT_FALSE(compare(candidate, baseline, tolerance_for("fp32")).pass);
    candidate = baseline;
    candidate.losses[0] = std::numeric_limits<double>::quiet_NaN();
    EXPECT_FALSE(compare(candidate, baseline, tolerance_for("fp32")).pass);
}

TEST(Comparison, TheInputsGradientIsComparedWhereTheBackendGivesIt) {
    auto baseline = sample_capture();
    baseline.input_gradient = {0.5f, 0.0f, 0.0f, -1.0f};
    auto candidate = baseline;
    // A tied window's gradient sent to another position: only the input's gradient shows it.
    std::swap(candidate.input_gradient[0], candidate.input_gradient[1]);
    auto result = compare(candidate, baseline, tolerance_for("fp32"));
    EXPECT_FALSE(result.pass);
    EXPECT_EQ(result.worst_relative()->quantity, "gradient input");
    EXPECT_NEAR(result.worst_relative()->relative, 0.5, 1e-6);  // against max |baseline|

    candidate.input_gradient.pop_back();
    result = compare(candidate, baseline, tolerance_for("fp32"));
    EXPECT_FALSE(result.pass);
    EXPECT_NE(result.problem.find("gradient input"), std::string::npos);

    // A backend that cannot give it is compared on the rest, and the comparison says so.
    candidate.input_gradient.clear();
    result = compare(candidate, baseline, tolerance_for("fp32"));
    EXPECT_TRUE(result.pass);
    ASSERT_EQ(result.not_compared.size(), 1u);
    EXPECT_NE(result.not_compared[0].find("gradient input"), std::string::npos);
}

TEST(Comparison, MissingTensorsAndWrongSizesAreProblemsNotPasses) {
    auto baseline = sample_capture();
    auto candidate = baseline;
    candidate.gradients.erase("conv.bias");
    auto result = compare(candidate, baseline, tolerance_for("fp32"));
    EXPECT_FALSE(result.pass);
    EXPECT_NE(result.problem.find("conv.bias"), std::string::npos);
    candidate = baseline;
    candidate.state["conv.weight"].pop_back();
    EXPECT_FALSE(compare(candidate, baseline, tolerance_for("fp32")).pass);
    candidate = baseline;
    candidate.losses.pop_back();
    EXPECT_FALSE(compare(candidate, baseline, tolerance_for("fp32")).pass);
}

TEST(Comparison, ReducedPrecisionIsLooserAndLabelled) {
    auto strict = tolerance_for("fp32");
    auto tf32 = tolerance_for("tf32");
    auto bf16 = tolerance_for("bf16");
    EXPECT_FALSE(strict.reduced_precision);
    EXPECT_TRUE(tf32.reduced_precision);
    EXPECT_TRUE(bf16.reduced_precision);
    EXPECT_GT(tf32.gradient, strict.gradient);
    EXPECT_GT(bf16.gradient, tf32.gradient);
    EXPECT_NE(tf32.label.find("reduced precision"), std::string::npos);

    auto baseline = sample_capture();
    auto candidate = baseline;
    candidate.gradients["conv.weight"][3] *= 1.01f;
    EXPECT_TRUE(compare(candidate, baseline, tf32).pass);
}

TEST(Comparison, EveryMathModeAManifestMayNameHasATolerance) {
    for (hb::Math m : hb::kMathModes) EXPECT_NO_THROW(tolerance_for(hb::to_string(m)));
    EXPECT_THROW(tolerance_for("fp8"), std::logic_error);
}

TEST(Comparison, ReducedPrecisionMeasuresNoiseAtItsPrecisionWithAHigherGradientFloor) {
    EXPECT_EQ(tolerance_for("fp32").significand_bits, 24);
    EXPECT_EQ(tolerance_for("tf32").significand_bits, 11);
    EXPECT_EQ(tolerance_for("fp16").significand_bits, 11);
    EXPECT_EQ(tolerance_for("bf16").significand_bits, 8);
    EXPECT_LT(tolerance_for("fp32").gradient_floor, tolerance_for("tf32").gradient_floor);
    EXPECT_LT(tolerance_for("tf32").gradient_floor, tolerance_for("bf16").gradient_floor);

    // A gradient that is zero in exact arithmetic holds bf16-sized noise in a bf16 backend: 0.4%
    // of the largest gradient fails float32's and TF32's floors and passes bf16's.
    auto baseline = sample_capture();
    auto candidate = baseline;
    candidate.gradients["conv.bias"] = {0.004f, -0.002f};
    EXPECT_FALSE(compare(candidate, baseline, tolerance_for("fp32")).pass);
    EXPECT_FALSE(compare(candidate, baseline, tolerance_for("tf32")).pass);
    EXPECT_TRUE(compare(candidate, baseline, tolerance_for("bf16")).pass);

    // Where bf16-sized rounding moves a gradient by up to 20% in the ensemble, a bf16 backend may
    // differ by up to kNoiseFactor times that.
    std::vector<StepCapture> ensemble(2, baseline);
    ensemble[0].gradients["conv.weight"][3] *= 1.2f;
    ensemble[1].gradients["conv.weight"][3] *= 0.9f;
    candidate = baseline;
    candidate.gradients["conv.weight"][3] *= 1.7f;
    EXPECT_FALSE(compare(candidate, baseline, tolerance_for("bf16")).pass);
    const auto result = compare(candidate, baseline, tolerance_for("bf16"), &ensemble);
    EXPECT_TRUE(result.pass);
    EXPECT_NEAR(result.worst_relative()->noise, 0.2, 1e-6);
    candidate.gradients["conv.weight"][3] = baseline.gradients["conv.weight"][3] * 3.5f;
    EXPECT_FALSE(compare(candidate, baseline, tolerance_for("bf16"), &ensemble).pass);
}

// In float32 the ensemble alone sets a quantity's tolerance: kNoiseFactor times its spread, or
// times the format's resolution where the members land on the oracle's own floats; the fixed
// float32 tolerance (2e-3 for a gradient) no longer floors it. Reduced precision keeps its floors.
TEST(Comparison, InFloat32TheEnsembleAloneSetsTheTolerance) {
    const auto baseline = sample_capture();
    std::vector<StepCapture> ensemble(2, baseline);
    ensemble[0].gradients["conv.weight"][3] *= 1 + 1e-5f;  // a spread of 1e-5 of the scale
    auto candidate = baseline;
    candidate.gradients["conv.weight"][3] *= 1 + 4e-5f;
    auto result = compare(candidate, baseline, tolerance_for("fp32"), &ensemble);
    EXPECT_TRUE(result.pass);
    for (const auto& d : result.differences) {
        if (d.quantity == "gradient conv.weight") {
            EXPECT_NEAR(d.tolerance, harness::check::kNoiseFactor * 1e-5, 1e-7);
        }
    }
    candidate.gradients["conv.weight"][3] = baseline.gradients.at("conv.weight")[3] * (1 + 1e-4f);
    EXPECT_FALSE(compare(candidate, baseline, tolerance_for("fp32"), &ensemble).pass);
    EXPECT_TRUE(compare(candidate, baseline, tolerance_for("fp32")).pass);  // the fixed 2e-3
    EXPECT_TRUE(compare(candidate, baseline, tolerance_for("tf32"), &ensemble).pass);

    // Where no member moved a quantity, the tolerance is kNoiseFactor float32 roundings of it:
    // a loss one rounding away passes, one 1e-6 away does not.
    candidate = baseline;
    candidate.losses[0] =
        static_cast<double>(std::nextafter(static_cast<float>(baseline.losses[0]), 2.0f));
    result = compare(candidate, baseline, tolerance_for("fp32"), &ensemble);
    EXPECT_TRUE(result.pass);
    EXPECT_NEAR(result.differences.front().resolution, std::ldexp(1.0, -24), 1e-12);
    candidate.losses[0] = baseline.losses[0] * (1 + 1e-6);
    EXPECT_FALSE(compare(candidate, baseline, tolerance_for("fp32"), &ensemble).pass);
}

// A quantity the ensemble moves by half its size or more is undetermined: counted, not a mismatch
// however far the backend is, and not the worst quantity; the rest is judged as before.
TEST(Comparison, AQuantityTheEnsembleCannotDetermineIsCountedNotJudged) {
    const auto baseline = sample_capture();
    std::vector<StepCapture> ensemble(2, baseline);
    ensemble[0].gradients["conv.weight"][3] = 0.4f;  // 60% of the tensor's scale away
    auto candidate = baseline;
    candidate.gradients["conv.weight"][3] = -1.0f;
    auto result = compare(candidate, baseline, tolerance_for("fp32"), &ensemble);
    EXPECT_TRUE(result.pass);
    EXPECT_EQ(result.undetermined_quantities(), 1);
    ASSERT_NE(result.worst_relative(), nullptr);
    EXPECT_NE(result.worst_relative()->quantity, "gradient conv.weight");

    candidate.losses[0] *= 1.01;  // a determined quantity out of bounds still fails
    result = compare(candidate, baseline, tolerance_for("fp32"), &ensemble);
    EXPECT_FALSE(result.pass);
    EXPECT_EQ(result.worst_relative()->quantity, "loss[1]");
}

// Two steps of Torch's RMSProp from `initial` with the capture's gradients (the same at both
// steps), as a correct backend computes them in float.
StepCapture stepped(const StepCapture& initial, const hb_optimizer& o) {
    StepCapture c = initial;
    c.later_gradients = {initial.gradients};
    for (const auto& [name, g] : initial.gradients) {
        const auto p = harness::check::replay_rmsprop(o, initial.state.at(name), {&g, &g});
        c.state[name].assign(p.begin(), p.end());
    }
    return c;
}

hb_optimizer torch_rmsprop() {
    hb_optimizer o{};
    o.variant = HB_RMSPROP_TORCH;
    o.learning_rate = 2.5e-4f;
    o.alpha = 0.99f;
    o.eps = 1e-8f;
    return o;
}

TEST(Comparison, UpdatesAreCheckedAgainstTheBackendsOwnGradientsReplayed) {
    const StepCapture start = sample_capture();
    harness::check::UpdateReplay replay;
    replay.optimizer = torch_rmsprop();
    replay.initial = start.state;
    const StepCapture baseline = stepped(start, replay.optimizer);

    // The noise gradients of conv.bias moved it by about 2 lr / sqrt(1 - alpha) in a direction
    // no backend determines; against its own gradients, the update is exact.
    auto result = compare(baseline, baseline, tolerance_for("fp32"), nullptr, &replay);
    EXPECT_TRUE(result.pass);
    bool found = false;
    for (const auto& d : result.differences)
        if (d.quantity == "update conv.weight") {
            found = true;
            // Measured against the movement: lr / sqrt(1 - alpha), then lr / sqrt(0.0199).
            EXPECT_NEAR(d.scale, 2.5e-4 * (10 + 1 / std::sqrt(0.0199)), 1e-6);
        }
    EXPECT_TRUE(found);

    // A tensor that was never updated is an error of 100% of its movement.
    auto frozen = baseline;
    frozen.state["conv.weight"] = start.state.at("conv.weight");
    result = compare(frozen, baseline, tolerance_for("fp32"), nullptr, &replay);
    EXPECT_FALSE(result.pass);
    EXPECT_EQ(result.worst_relative()->quantity, "update conv.weight");
    EXPECT_NEAR(result.worst_relative()->relative, 1.0, 1e-3);

    // One element left un-updated too, even where the rounding noise of the state is large.
    std::vector<StepCapture> ensemble(1, baseline);
    ensemble[0].state["conv.weight"][1] += 5e-3f;
    auto tail = baseline;
    tail.state["conv.weight"][3] = start.state.at("conv.weight")[3];
    result = compare(tail, baseline, tolerance_for("fp32"), &ensemble, &replay);
    EXPECT_FALSE(result.pass);
    EXPECT_EQ(result.worst_relative()->quantity, "update conv.weight");
}

TEST(Comparison, ReplayedUpdatesFollowEveryRmsPropVariant) {
    // The settings are floats (0.99f is not 0.99): agreement to 1e-8 of updates of 2.5e-3.
    hb_optimizer o = torch_rmsprop();
    const std::vector<float> p0 = {0.5f}, g = {0.1f};
    auto one = [&](const hb_optimizer& opt) {
        return harness::check::replay_rmsprop(opt, p0, {&g})[0];
    };
    EXPECT_NEAR(one(o), 0.5 - 2.5e-4 * 0.1 / (std::sqrt(0.01 * 0.01) + 1e-8), 1e-8);
    o.weight_decay = 0.1f;  // g + wd p = 0.15
    EXPECT_NEAR(one(o), 0.5 - 2.5e-4 * 0.15 / (std::sqrt(0.01 * 0.15 * 0.15) + 1e-8), 1e-8);
    hb_optimizer tf = torch_rmsprop();
    tf.variant = HB_RMSPROP_TENSORFLOW;
    tf.alpha = 0.9f;
    tf.eps = 1e-10f;
    tf.initial_square_average = 1;
    EXPECT_NEAR(one(tf), 0.5 - 2.5e-4 * 0.1 / std::sqrt(0.9 + 0.1 * 0.01 + 1e-10), 1e-8);
    // Momentum: the second step adds m times the first step's.
    o = torch_rmsprop();
    o.momentum = 0.9f;
    const auto two = harness::check::replay_rmsprop(o, p0, {&g, &g})[0];
    const double d1 = 0.1 / std::sqrt(0.01 * 0.01), d2 = 0.1 / std::sqrt((0.99 + 1) * 0.01 * 0.01);
    EXPECT_NEAR(two, 0.5 - 2.5e-4 * d1 - 2.5e-4 * (0.9 * d1 + d2), 1e-7);
}

// A baseline, a backend that passed and one that was skipped.
harness::check::CheckOutcome sample_outcome() {
    namespace hc = harness::check;
    hc::CheckOutcome outcome;
    outcome.baseline.status = harness::results::Status::ok;
    outcome.baseline.losses = {1.25, 1.125};
    hc::BackendCheck passed, skipped;
    passed.run.backend = "onednn";
    passed.run.device = "cpu";
    passed.run.math_mode = "fp32";
    passed.run.status = harness::results::Status::ok;
    passed.comparison = compare(sample_capture(), sample_capture(), tolerance_for("fp32"));
    skipped.run.backend = "cudnn";
    skipped.run.device = "cuda:0";
    skipped.run.math_mode = "fp32";
    skipped.run.status = harness::results::Status::skipped;
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
        compare(off, sample_capture(), harness::check::layer_tolerance_for("fp32"));
    mismatched.run.status = harness::results::Status::mismatch;
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

const std::string kFakeEnv = std::string("HARNESS_PLUGIN_PATH=") + HB_FAKE_PLUGIN_DIR;

TEST(HarnessCheck, TheReferencePassesAgainstItselfWithOtherThreadCounts) {
    TempDir dir;
    auto r = run_harness(
        "check " + std::string(HB_SOURCE_DIR) + "/configs/check.yaml --backends reference-1thread",
        "cd " + dir.path().string() + " &&");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("reference-1thread"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("PASS"), std::string::npos) << r.output;
}

TEST(HarnessCheck, APerturbedBackendIsAMismatchAndRunMarksIt) {
    TempDir dir;
    const std::string config = std::string(HB_TEST_DATA_DIR) + "/perturbed.yaml";
    const std::string env =
        "cd " + dir.path().string() + " && XDG_CACHE_HOME=" + (dir / "cache") + " " + kFakeEnv;
    auto check = run_harness("check " + config, env);
    EXPECT_EQ(check.exit_code, 1) << check.output;
    EXPECT_NE(check.output.find("MISMATCH"), std::string::npos) << check.output;
    EXPECT_NE(check.output.find("gradient pre.conv.weight"), std::string::npos) << check.output;

    auto json =
        run_harness("check " + config + " --json", env, harness::testing::Stderr::discarded);
    auto j = nlohmann::json::parse(json.output);
    ASSERT_EQ(j["backends"].size(), 2u);
    EXPECT_EQ(j["baseline"]["name"], "reference-fp64");
    EXPECT_EQ(j["backends"][0]["verdict"], "PASS");  // the config's float32 reference
    EXPECT_EQ(j["backends"][1]["verdict"], "MISMATCH");
    EXPECT_EQ(j["backends"][1]["worst_relative"]["quantity"], "gradient pre.conv.weight");

    auto run = run_harness("run " + config + " --output " + (dir / "out.csv"), env);
    EXPECT_EQ(run.exit_code, 1) << run.output;
    auto rows = harness::results::read_csv(dir / "out.csv");
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0]["status"], "ok");
    EXPECT_EQ(rows[0]["check"], "pass");
    EXPECT_EQ(rows[1]["status"], "mismatch");
    EXPECT_EQ(rows[1]["check"], "mismatch");
    EXPECT_FALSE(rows[1]["median_ms"].empty());  // timings are kept, but flagged
}

// The check honours the capability flags: a plugin without HB_CAP_GRADIENTS is not asked for its
// gradients (this one fails if it is), its losses and state are compared, and the table says what
// was not; as the baseline, it is refused before any backend runs.
TEST(HarnessCheck, ABackendWithoutGradientsIsNotAskedForThem) {
    TempDir dir;
    const std::string config = std::string(HB_TEST_DATA_DIR) + "/no_gradients.yaml";
    const std::string env =
        "cd " + dir.path().string() + " && XDG_CACHE_HOME=" + (dir / "cache") + " " + kFakeEnv;
    auto check = run_harness("check " + config + " --backends no-gradients", env);
    EXPECT_EQ(check.exit_code, 0) << check.output;
    EXPECT_NE(check.output.find("PASS"), std::string::npos) << check.output;
    EXPECT_NE(check.output.find("not compared: gradients: the plugin cannot give them (no "
                                "HB_CAP_GRADIENTS)"),
              std::string::npos)
        << check.output;
    // Its bounds: the losses, the input's gradient and the state, no parameter's gradient.
    const size_t bounds = check.output.find("bounds (relative): loss ");
    ASSERT_NE(bounds, std::string::npos) << check.output;
    const std::string line = check.output.substr(bounds, check.output.find('\n', bounds) - bounds);
    EXPECT_NE(line.find(", state "), std::string::npos) << line;
    const size_t input = line.find(", gradient input ");
    EXPECT_NE(input, std::string::npos) << line;
    EXPECT_EQ(line.find("gradient"), input + 2) << line;
    EXPECT_EQ(line.find("gradient", input + 3), std::string::npos) << line;

    auto baseline = run_harness("check " + config + " --baseline no-gradients", env);
    EXPECT_EQ(baseline.exit_code, 1) << baseline.output;
    EXPECT_NE(baseline.output.find("baseline 'no-gradients' cannot give its gradients"),
              std::string::npos)
        << baseline.output;
}

TEST(HarnessCheck, APassingCheckIsRecordedInTheRunsCsv) {
    TempDir dir;
    const std::string config = std::string(HB_SOURCE_DIR) + "/configs/check.yaml";
    const std::string env = "cd " + dir.path().string() + " && XDG_CACHE_HOME=" + (dir / "cache");
    ASSERT_EQ(run_harness("check " + config + " --backends reference-1thread", env).exit_code, 0);
    auto run =
        run_harness("run " + config + " --backends reference-1thread --iterations 1 --output " +
                        (dir / "out.csv"),
                    env);
    ASSERT_EQ(run.exit_code, 0) << run.output;
    auto rows = harness::results::read_csv(dir / "out.csv");
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0]["check"], "pass");
}

TEST(HarnessCheck, ABaselineThatCannotFinishSaysSoAndSuggestsAnother) {
    TempDir dir;
    auto r = run_harness("check " + std::string(HB_TEST_DATA_DIR) + "/too_big.yaml",
                         "cd " + dir.path().string() + " &&");
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find("too big"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("--baseline"), std::string::npos) << r.output;
}

TEST(HarnessCheck, BadArgumentsAreUsageErrors) {
    EXPECT_EQ(run_harness("check").exit_code, 2);
    EXPECT_EQ(run_harness("check " + std::string(HB_SOURCE_DIR) + "/configs/check.yaml --steps 0")
                  .exit_code,
              2);
    EXPECT_EQ(
        run_harness("check " + std::string(HB_SOURCE_DIR) + "/configs/check.yaml --backends nosuch")
            .exit_code,
        2);
}

// One configuration of each layer kind of the check network (the stem convolution reads the
// model's input: no probe).
const std::string kOneOfEachKind =
    "'^(conv7x7|conv3x3/s1/c16-16/8x8|batchnorm\\+relu/c16/8x8|add3|maxpool2d/c32|upsample|"
    "mse_loss)'";

TEST(HarnessCheckLayers, ABadExpressionIsAUsageErrorAndNothingRuns) {
    const std::string config = std::string(HB_SOURCE_DIR) + "/configs/check.yaml";
    for (const std::string bad : {"'('", "nosuchlayer"}) {
        TempDir dir;
        const auto r = run_harness("check " + config + " --layers " + bad,
                                   "cd " + dir.path().string() + " &&");
        EXPECT_EQ(r.exit_code, 2) << r.output;
        EXPECT_NE(r.output.find("--layers"), std::string::npos) << r.output;
        EXPECT_EQ(r.output.find("baseline"), std::string::npos) << "it ran: " << r.output;
    }
}

TEST(HarnessCheckLayers, TheReferenceAndOnednnPassOneConfigurationOfEachKind) {
    if (!std::filesystem::exists(std::string(HB_PLUGIN_DIR) + "/hb_onednn.so"))
        GTEST_SKIP() << "plugin onednn is not built on this machine";
    TempDir dir;
    const auto r =
        run_harness("check " + std::string(HB_SOURCE_DIR) +
                        "/configs/check.yaml --backends reference-1thread,onednn "
                        "--json --layers " +
                        kOneOfEachKind,
                    "cd " + dir.path().string() + " &&", harness::testing::Stderr::discarded);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const auto j = nlohmann::json::parse(r.output, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r.output;
    ASSERT_EQ(j.at("configurations").size(), 7u) << r.output;
    std::set<std::string> kinds;
    for (const auto& c : j["configurations"]) {
        kinds.insert(c.at("kind").get<std::string>());
        EXPECT_EQ(c.at("baseline_problem"), "") << c.at("name");
        for (const auto& b : c.at("backends")) {
            EXPECT_EQ(b.at("verdict"), "PASS") << c.at("name") << " " << b.at("backend");
            EXPECT_EQ(b.at("tolerance").at("label"), "fp32 strict, one layer");
        }
    }
    EXPECT_EQ(kinds, (std::set<std::string>{"conv2d", "batchnorm+relu", "add", "maxpool2d",
                                            "upsample", "mse_loss"}));
    EXPECT_EQ(j.at("summary").size(), 2 * kinds.size());
    for (const auto& s : j["summary"]) EXPECT_EQ(s.at("failed"), 0) << s;
}

// What a configuration's check compares is its own graph's: the losses, and every tensor of its
// layers and its probes, gradients and updates of the parameters, the running statistics' state.
TEST(HarnessCheckLayers, AConfigurationsCaptureHoldsItsOwnTensorsAndItsProbes) {
    const std::string config = std::string(HB_SOURCE_DIR) + "/configs/check.yaml";
    const auto model = harness::model::build_hourglass(harness::config::load_config(config).model);
    const auto units = harness::model::layer_units(model);
    TempDir dir;
    const auto r = run_harness(
        "check " + config +
            " --backends reference-1thread --json --layers '^(add3|batchnorm\\+relu/c16/8x8)'",
        "cd " + dir.path().string() + " &&", harness::testing::Stderr::discarded);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto j = nlohmann::json::parse(r.output, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r.output;
    ASSERT_EQ(j.at("configurations").size(), 2u) << r.output;
    for (const auto& c : j["configurations"]) {
        const std::string name = c.at("name");
        SCOPED_TRACE(name);
        std::set<std::string> expected = {"loss[1]", "loss[2]", "gradient input"}, compared;
        int probes = 0;
        for (const auto& u : units) {
            if (u.name != name) continue;
            for (const auto& t : harness::model::unit_graph(model, u).tensors) {
                if (t.trainable()) {
                    expected.insert("gradient " + t.name);
                    expected.insert("update " + t.name);
                } else {
                    expected.insert("state-1 " + t.name);
                    expected.insert("state " + t.name);
                }
                probes += t.name.rfind("probe", 0) == 0;
            }
        }
        EXPECT_EQ(probes, name.rfind("add3", 0) == 0 ? 3 : 1);
        ASSERT_EQ(c.at("backends").size(), 1u);
        for (const auto& d : c["backends"][0].at("differences"))
            compared.insert(d.at("quantity").get<std::string>());
        EXPECT_EQ(compared, expected);
    }
}

}  // namespace

namespace {

// Every CPU backend that is built must compute the same step as the reference.
struct CpuBackend {
    std::string name, plugin;
    friend std::ostream& operator<<(std::ostream& out, const CpuBackend& b) {
        return out << b.name;
    }
};

class CpuBackendConformance : public ::testing::TestWithParam<CpuBackend> {};

TEST_P(CpuBackendConformance, PassesTheCheckConfig) {
    const CpuBackend& b = GetParam();
    if (!std::filesystem::exists(std::string(HB_PLUGIN_DIR) + "/hb_" + b.plugin + ".so"))
        GTEST_SKIP() << "plugin " << b.plugin << " is not built on this machine";
    TempDir dir;
    auto r = run_harness(
        "check " + std::string(HB_SOURCE_DIR) + "/configs/check.yaml --backends " + b.name,
        "cd " + dir.path().string() + " &&");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("PASS"), std::string::npos) << r.output;
}

// A run of one step ends while the backend's own threads (an OpenMP pool) may still spin: the
// worker must exit without unloading the library under them. Three tries, since it is a race.
TEST_P(CpuBackendConformance, ItsShortestRunEndsCleanly) {
    const CpuBackend& b = GetParam();
    if (!std::filesystem::exists(std::string(HB_PLUGIN_DIR) + "/hb_" + b.plugin + ".so"))
        GTEST_SKIP() << "plugin " << b.plugin << " is not built on this machine";
    TempDir dir;
    for (int attempt = 0; attempt < 3; ++attempt) {
        auto r =
            run_harness("run " + std::string(HB_SOURCE_DIR) + "/configs/check.yaml --backends " +
                            b.name + " --warmup 0 --iterations 1 --output " + (dir / "run.csv"),
                        "cd " + dir.path().string() + " &&");
        ASSERT_EQ(r.exit_code, 0) << "attempt " << attempt << ": " << r.output;
    }
}

INSTANTIATE_TEST_SUITE_P(Backends, CpuBackendConformance,
                         ::testing::Values(CpuBackend{"onednn", "onednn"},
                                           CpuBackend{"libtorch-cpu", "libtorch"},
                                           CpuBackend{"onednn-debian", "onednn_debian"},
                                           CpuBackend{"libtorch-cpu-debian", "libtorch_debian"},
                                           CpuBackend{"tensorflow", "tensorflow"},
                                           CpuBackend{"tensorflow-onednn", "tensorflow"}),
                         [](const ::testing::TestParamInfo<CpuBackend>& param) {
                             std::string name = param.param.name;
                             for (char& c : name)
                                 if (c == '-') c = '_';
                             return name;
                         });

}  // namespace
