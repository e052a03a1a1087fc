// Conformance: the comparison itself, with its tolerances, the rounding-noise ensemble and the
// updates replayed on a backend's own gradients.
#include "check/comparison.hpp"
#include "check/check_json_reporter.hpp"
#include "check/check_table_reporter.hpp"
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
using harness::check::LaterGradients;
using harness::check::members_of;
using harness::check::StepCapture;
using harness::check::tolerance_for;
using harness::testing::run_harness;
using harness::testing::sample_capture;
using harness::testing::TempDir;

TEST(Comparison, IdenticalCapturesPass) {
    auto c = sample_capture();
    auto result = compare(c, c, tolerance_for(hb::Math::fp32));
    EXPECT_TRUE(result.pass);
    EXPECT_TRUE(result.problem.empty());
    EXPECT_EQ(result.differences.size(), 2u + 2u + 3u);
    EXPECT_EQ(result.worst_abs()->max_abs, 0.0);
}

TEST(Comparison, APerturbedGradientIsCaughtAndNamed) {
    auto baseline = sample_capture();
    auto candidate = baseline;
    candidate.gradients["conv.weight"][3] *= 1.01f;
    auto result = compare(candidate, baseline, tolerance_for(hb::Math::fp32));
    EXPECT_FALSE(result.pass);
    EXPECT_EQ(result.worst_relative()->quantity, "gradient conv.weight");
    EXPECT_NEAR(result.worst_relative()->relative, 0.01, 1e-6);
}

TEST(Comparison, APerturbedLossIsCaught) {
    auto baseline = sample_capture();
    auto candidate = baseline;
    candidate.losses[1] *= 1.001;
    auto result = compare(candidate, baseline, tolerance_for(hb::Math::fp32));
    EXPECT_FALSE(result.pass);
    EXPECT_EQ(result.worst_relative()->quantity, "loss[2]");
}

TEST(Comparison, APerturbedRunningStatisticIsCaught) {
    auto baseline = sample_capture();
    auto candidate = baseline;
    candidate.state["bn.running_var"][1] = 0.95f;
    auto result = compare(candidate, baseline, tolerance_for(hb::Math::fp32));
    EXPECT_FALSE(result.pass);
    EXPECT_EQ(result.worst_relative()->quantity, "state bn.running_var");
}

TEST(Comparison, NoiseOnGradientsThatAreZeroInExactArithmeticPasses) {
    auto baseline = sample_capture();
    auto candidate = baseline;
    candidate.gradients["conv.bias"] = {-3e-9f, 1e-9f};  // other noise, other signs
    EXPECT_TRUE(compare(candidate, baseline, tolerance_for(hb::Math::fp32)).pass);
}

TEST(Comparison, ParametersWhoseUpdateDirectionIsUndeterminedAreLeftOut) {
    auto baseline = sample_capture();
    auto candidate = baseline;
    // RMSProp moved the noise-gradient biases by +-lr/sqrt(1-alpha) in opposite directions.
    candidate.state["conv.bias"] = {0.01f - 5e-3f, -0.02f + 5e-3f};
    auto result = compare(candidate, baseline, tolerance_for(hb::Math::fp32));
    EXPECT_TRUE(result.pass);
    for (const auto& d : result.differences) {
        if (d.quantity == "state conv.bias") {
            EXPECT_EQ(d.undetermined, 2);
        }
    }

    // A parameter with a clear gradient must still agree.
    candidate.state["conv.weight"][0] += 5e-3f;
    EXPECT_FALSE(compare(candidate, baseline, tolerance_for(hb::Math::fp32)).pass);
}

TEST(Comparison, NonFiniteValuesNeverPass) {
    auto baseline = sample_capture();
    auto candidate = baseline;
    candidate.state["conv.weight"][0] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_FALSE(compare(candidate, baseline, tolerance_for(hb::Math::fp32)).pass);
    candidate = baseline;
    candidate.state["conv.bias"][0] = std::numeric_limits<float>::infinity();  // undetermined
    EXPECT_FALSE(compare(candidate, baseline, tolerance_for(hb::Math::fp32)).pass);
    candidate = baseline;
    candidate.losses[0] = std::numeric_limits<double>::quiet_NaN();
    EXPECT_FALSE(compare(candidate, baseline, tolerance_for(hb::Math::fp32)).pass);
}

TEST(Comparison, TheInputsGradientIsComparedWhereTheBackendGivesIt) {
    auto baseline = sample_capture();
    baseline.input_gradient = {0.5f, 0.0f, 0.0f, -1.0f};
    auto candidate = baseline;
    // A tied window's gradient sent to another position: only the input's gradient shows it.
    std::swap(candidate.input_gradient[0], candidate.input_gradient[1]);
    auto result = compare(candidate, baseline, tolerance_for(hb::Math::fp32));
    EXPECT_FALSE(result.pass);
    EXPECT_EQ(result.worst_relative()->quantity, "gradient input");
    EXPECT_NEAR(result.worst_relative()->relative, 0.5, 1e-6);  // against max |baseline|

    candidate.input_gradient.pop_back();
    result = compare(candidate, baseline, tolerance_for(hb::Math::fp32));
    EXPECT_FALSE(result.pass);
    EXPECT_NE(result.problem.find("gradient input"), std::string::npos);

    // A backend that cannot give it is compared on the rest, and the comparison says so.
    candidate.input_gradient.clear();
    result = compare(candidate, baseline, tolerance_for(hb::Math::fp32));
    EXPECT_TRUE(result.pass);
    ASSERT_EQ(result.not_compared.size(), 1u);
    EXPECT_NE(result.not_compared[0].find("gradient input"), std::string::npos);
}

TEST(Comparison, MissingTensorsAndWrongSizesAreProblemsNotPasses) {
    auto baseline = sample_capture();
    auto candidate = baseline;
    candidate.gradients.erase("conv.bias");
    auto result = compare(candidate, baseline, tolerance_for(hb::Math::fp32));
    EXPECT_FALSE(result.pass);
    EXPECT_NE(result.problem.find("conv.bias"), std::string::npos);
    candidate = baseline;
    candidate.state["conv.weight"].pop_back();
    EXPECT_FALSE(compare(candidate, baseline, tolerance_for(hb::Math::fp32)).pass);
    candidate = baseline;
    candidate.losses.pop_back();
    EXPECT_FALSE(compare(candidate, baseline, tolerance_for(hb::Math::fp32)).pass);
}

TEST(Comparison, ReducedPrecisionIsLooserAndLabelled) {
    auto strict = tolerance_for(hb::Math::fp32);
    auto tf32 = tolerance_for(hb::Math::tf32);
    auto bf16 = tolerance_for(hb::Math::bf16);
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
    for (hb::Math m : hb::kMathModes) EXPECT_FALSE(tolerance_for(m).label.empty());
}

TEST(Comparison, ReducedPrecisionMeasuresNoiseAtItsPrecisionWithAHigherGradientFloor) {
    EXPECT_EQ(tolerance_for(hb::Math::fp32).significand_bits, 24);
    EXPECT_EQ(tolerance_for(hb::Math::tf32).significand_bits, 11);
    EXPECT_EQ(tolerance_for(hb::Math::fp16).significand_bits, 11);
    EXPECT_EQ(tolerance_for(hb::Math::bf16).significand_bits, 8);
    EXPECT_LT(tolerance_for(hb::Math::fp32).gradient_floor,
              tolerance_for(hb::Math::tf32).gradient_floor);
    EXPECT_LT(tolerance_for(hb::Math::tf32).gradient_floor,
              tolerance_for(hb::Math::bf16).gradient_floor);

    // A gradient that is zero in exact arithmetic holds bf16-sized noise in a bf16 backend: 0.4%
    // of the largest gradient fails float32's and TF32's floors and passes bf16's.
    auto baseline = sample_capture();
    auto candidate = baseline;
    candidate.gradients["conv.bias"] = {0.004f, -0.002f};
    EXPECT_FALSE(compare(candidate, baseline, tolerance_for(hb::Math::fp32)).pass);
    EXPECT_FALSE(compare(candidate, baseline, tolerance_for(hb::Math::tf32)).pass);
    EXPECT_TRUE(compare(candidate, baseline, tolerance_for(hb::Math::bf16)).pass);

    // Where bf16-sized rounding moves a gradient by up to 15% in the ensemble, a bf16 backend may
    // differ by up to kNoiseFactor times that.
    std::vector<StepCapture> ensemble(2, baseline);
    ensemble[0].gradients["conv.weight"][3] *= 1.15f;
    ensemble[1].gradients["conv.weight"][3] *= 0.9f;
    candidate = baseline;
    candidate.gradients["conv.weight"][3] *= 1.6f;
    EXPECT_FALSE(compare(candidate, baseline, tolerance_for(hb::Math::bf16)).pass);
    const auto result =
        compare(candidate, baseline, tolerance_for(hb::Math::bf16), members_of(ensemble));
    EXPECT_TRUE(result.pass);
    EXPECT_NEAR(result.worst_relative()->noise, 0.15, 1e-6);
    candidate.gradients["conv.weight"][3] = baseline.gradients["conv.weight"][3] * 3.5f;
    EXPECT_FALSE(
        compare(candidate, baseline, tolerance_for(hb::Math::bf16), members_of(ensemble)).pass);
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
    auto result = compare(candidate, baseline, tolerance_for(hb::Math::fp32), members_of(ensemble));
    EXPECT_TRUE(result.pass);
    for (const auto& d : result.differences) {
        if (d.quantity == "gradient conv.weight") {
            EXPECT_NEAR(d.tolerance, harness::check::kNoiseFactor * 1e-5, 1e-7);
        }
    }
    candidate.gradients["conv.weight"][3] = baseline.gradients.at("conv.weight")[3] * (1 + 1e-4f);
    EXPECT_FALSE(
        compare(candidate, baseline, tolerance_for(hb::Math::fp32), members_of(ensemble)).pass);
    EXPECT_TRUE(
        compare(candidate, baseline, tolerance_for(hb::Math::fp32)).pass);  // the fixed 2e-3
    EXPECT_TRUE(
        compare(candidate, baseline, tolerance_for(hb::Math::tf32), members_of(ensemble)).pass);

    // Where no member moved a quantity, the tolerance is kNoiseFactor float32 roundings of it:
    // a loss one rounding away passes, one 1e-6 away does not.
    candidate = baseline;
    candidate.losses[0] =
        static_cast<double>(std::nextafter(static_cast<float>(baseline.losses[0]), 2.0f));
    result = compare(candidate, baseline, tolerance_for(hb::Math::fp32), members_of(ensemble));
    EXPECT_TRUE(result.pass);
    EXPECT_NEAR(result.differences.front().resolution, std::ldexp(1.0, -24), 1e-12);
    candidate.losses[0] = baseline.losses[0] * (1 + 1e-6);
    EXPECT_FALSE(
        compare(candidate, baseline, tolerance_for(hb::Math::fp32), members_of(ensemble)).pass);
}

// Step k's gradients are compared where both sides computed them from the same state: a backend's
// own against the baseline's from the backend's state, each tensor within kNoiseFactor times the
// spread of members that computed it from the baseline's state.
TEST(Comparison, LaterStepsGradientsAreComparedFromASharedState) {
    const auto baseline = sample_capture();
    const auto step2 = baseline.gradients;
    auto candidate = baseline;
    candidate.anchored = candidate.anchored_baseline =
        std::make_shared<LaterGradients>(LaterGradients{step2});
    std::vector<StepCapture> ensemble(2, candidate);
    auto moved = std::make_shared<LaterGradients>(LaterGradients{step2});
    (*moved)[0]["conv.weight"][3] *= 1 + 1e-5f;
    ensemble[0].anchored = moved;
    auto result = compare(candidate, baseline, tolerance_for(hb::Math::fp32), members_of(ensemble));
    EXPECT_TRUE(result.pass);
    int later = 0;
    for (const auto& d : result.differences)
        if (d.quantity.rfind("gradient[2] ", 0) == 0) {
            ++later;
            if (d.quantity == "gradient[2] conv.weight") {
                EXPECT_NEAR(d.tolerance, harness::check::kNoiseFactor * 1e-5, 1e-7);
            }
        }
    EXPECT_EQ(later, static_cast<int>(step2.size()));

    auto off = std::make_shared<LaterGradients>(LaterGradients{step2});
    (*off)[0]["conv.weight"][3] *= 1 + 1e-3f;
    candidate.anchored = off;
    result = compare(candidate, baseline, tolerance_for(hb::Math::fp32), members_of(ensemble));
    EXPECT_FALSE(result.pass);
    EXPECT_EQ(result.worst_relative()->quantity, "gradient[2] conv.weight");

    candidate.anchored = std::make_shared<LaterGradients>();
    result = compare(candidate, baseline, tolerance_for(hb::Math::fp32), members_of(ensemble));
    EXPECT_FALSE(result.pass);
    EXPECT_NE(result.problem.find("gradient[2]"), std::string::npos) << result.problem;
}

// A quantity the ensemble moves by half its size or more is undetermined: counted, not a mismatch
// however far the backend is, and not the worst quantity; the rest is judged as before.
TEST(Comparison, AQuantityTheEnsembleCannotDetermineIsCountedNotJudged) {
    const auto baseline = sample_capture();
    std::vector<StepCapture> ensemble(2, baseline);
    ensemble[0].gradients["conv.weight"][3] = 0.4f;  // 60% of the tensor's scale away
    auto candidate = baseline;
    candidate.gradients["conv.weight"][3] = -1.0f;
    auto result = compare(candidate, baseline, tolerance_for(hb::Math::fp32), members_of(ensemble));
    EXPECT_TRUE(result.pass);
    EXPECT_EQ(result.undetermined_quantities(), 1);
    ASSERT_NE(result.worst_relative(), nullptr);
    EXPECT_NE(result.worst_relative()->quantity, "gradient conv.weight");

    candidate.losses[0] *= 1.01;  // a determined quantity out of bounds still fails
    result = compare(candidate, baseline, tolerance_for(hb::Math::fp32), members_of(ensemble));
    EXPECT_FALSE(result.pass);
    EXPECT_EQ(result.worst_relative()->quantity, "loss[1]");
}

// A tolerance of the quantity's whole scale or more judges nothing: where the ensemble's spread
// (under half the scale) sets one, the quantity is counted undetermined, not as a pass.
TEST(Comparison, AToleranceOfTheWholeScaleJudgesNothing) {
    const auto baseline = sample_capture();
    std::vector<StepCapture> ensemble(2, baseline);
    ensemble[0].gradients["conv.weight"][3] = 0.7f;  // a spread of 0.3: a tolerance of 1.5
    auto candidate = baseline;
    candidate.gradients["conv.weight"][3] = -0.2f;  // 1.2 of the scale away
    const auto result =
        compare(candidate, baseline, tolerance_for(hb::Math::fp32), members_of(ensemble));
    EXPECT_TRUE(result.pass);
    EXPECT_EQ(result.undetermined_quantities(), 1);
    for (const auto& d : result.differences)
        if (d.quantity == "gradient conv.weight") {
            EXPECT_GE(d.tolerance, harness::check::kJudgingTolerance);
            EXPECT_FALSE(d.determined);
        }
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
    auto result = compare(baseline, baseline, tolerance_for(hb::Math::fp32), {}, &replay);
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
    result = compare(frozen, baseline, tolerance_for(hb::Math::fp32), {}, &replay);
    EXPECT_FALSE(result.pass);
    EXPECT_EQ(result.worst_relative()->quantity, "update conv.weight");
    EXPECT_NEAR(result.worst_relative()->relative, 1.0, 1e-3);

    // One element left un-updated too, even where the rounding noise of the state is large.
    std::vector<StepCapture> ensemble(1, baseline);
    ensemble[0].state["conv.weight"][1] += 5e-3f;
    auto tail = baseline;
    tail.state["conv.weight"][3] = start.state.at("conv.weight")[3];
    result = compare(tail, baseline, tolerance_for(hb::Math::fp32), members_of(ensemble), &replay);
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

}  // namespace
