// `harness check` end to end: catching a backend that is off, recording a passing check, every
// built CPU backend against the reference.
#include "check/check_json_reporter.hpp"
#include "check/check_runner.hpp"
#include "check/check_table_reporter.hpp"
#include "check/comparison.hpp"
#include "check/layer_check.hpp"
#include "config/config.hpp"
#include "harness_process.hpp"
#include "hb/manifest.hpp"
#include "model/hourglass.hpp"
#include "model/layer_units.hpp"
#include "output/csv_reader.hpp"
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
using harness::testing::fake_plugins_env;
using harness::testing::run_harness;
using harness::testing::TempDir;

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
    const std::string env = "cd " + dir.path().string() + " && XDG_CACHE_HOME=" + (dir / "cache") +
                            " " + fake_plugins_env();
    auto check = run_harness("check " + config, env);
    EXPECT_EQ(check.exit_code, 1) << check.output;
    EXPECT_NE(check.output.find("MISMATCH"), std::string::npos) << check.output;
    EXPECT_NE(check.output.find("gradient pre.conv.weight"), std::string::npos) << check.output;
    EXPECT_NE(check.output.find("    ensemble: out of bounds against all " +
                                std::to_string(harness::check::kEnsembleSize) + " members\n"),
              std::string::npos)
        << check.output;

    auto json =
        run_harness("check " + config + " --json", env, harness::testing::Stderr::discarded);
    auto j = nlohmann::json::parse(json.output);
    ASSERT_EQ(j["backends"].size(), 2u);
    EXPECT_EQ(j["baseline"]["name"], "reference-fp64");
    EXPECT_EQ(j["backends"][0]["verdict"], "PASS");  // the config's float32 reference
    EXPECT_EQ(j["backends"][1]["verdict"], "MISMATCH");
    EXPECT_EQ(j["backends"][1]["worst_relative"]["quantity"], "gradient pre.conv.weight");
    EXPECT_EQ(j["backends"][0]["ensemble_members"], harness::check::kFirstMembers);
    EXPECT_EQ(j["backends"][1]["ensemble_members"], harness::check::kEnsembleSize);

    auto run = run_harness("run " + config + " --output " + (dir / "out.csv"), env);
    EXPECT_EQ(run.exit_code, 1) << run.output;
    auto rows = harness::output::read_csv(dir / "out.csv");
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0]["status"], "ok");
    EXPECT_EQ(rows[0]["check"], "pass");
    EXPECT_EQ(rows[1]["status"], "mismatch");
    EXPECT_EQ(rows[1]["check"], "mismatch");
    EXPECT_FALSE(rows[1]["median_ms"].empty());  // timings are kept, but flagged
}

// A backend whose later steps run on the weights from before the update (a working copy never
// refreshed) is right at step 1 and reports gradients that its own updates replay consistently.
// Its step-2 gradients, against the baseline's computed from the backend's own state after step
// 1, are off by thousands of tolerances; its loss[2] by a few
// (tests/fake_plugins/stale_weights.cpp; docs/conformance.md "Step k").
TEST(HarnessCheck, AStepComputedFromStaleWeightsIsCaughtByItsGradients) {
    TempDir dir;
    const std::string config = std::string(HB_TEST_DATA_DIR) + "/perturbed.yaml";
    auto r = run_harness("check " + config + " --plugin fake_stale_weights --steps 2 --json",
                         fake_plugins_env() + " XDG_CACHE_HOME=" + (dir / "cache"),
                         harness::testing::Stderr::discarded);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    const auto j = nlohmann::json::parse(r.output);
    ASSERT_EQ(j["backends"].size(), 1u);
    const auto& backend = j["backends"][0];
    EXPECT_EQ(backend["verdict"], "MISMATCH");
    double step_two_gradients = 0, loss_two = 0;
    int compared = 0;
    for (const auto& d : backend["differences"]) {
        const std::string quantity = d["quantity"];
        const double ratio = d["relative"].get<double>() / d["tolerance"].get<double>();
        if (!d["determined"].get<bool>()) continue;
        if (quantity.rfind("gradient[2] ", 0) == 0) {
            ++compared;
            step_two_gradients = std::max(step_two_gradients, ratio);
        } else if (quantity == "loss[2]") {
            loss_two = ratio;
        } else if (quantity.rfind("state ", 0) != 0) {
            EXPECT_LE(ratio, 1) << quantity;  // step 1 and the updates are right
        }
    }
    EXPECT_GT(compared, 0) << backend.dump(1);
    EXPECT_GT(step_two_gradients, 100) << backend.dump(1);
    EXPECT_GT(step_two_gradients, 100 * loss_two) << backend.dump(1);
}

// Step 2 from a backend's own states is computed once for each distinct states: two entries of
// one plugin that differ only in where the batches come from share it.
TEST(HarnessCheck, EntriesWithTheSameStatesShareTheirLaterSteps) {
    TempDir dir;
    const auto r = run_harness("check " + std::string(HB_SOURCE_DIR) +
                                   "/configs/check-tiny.yaml --backends reference,reference-host",
                               "cd " + dir.path().string() + " &&");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("reference: steps 2 to 2 from its own states, in the baseline and the "
                            "ensemble\n"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("reference-host: steps 2 to 2 from its own states, as reference's\n"),
              std::string::npos)
        << r.output;
}

// The check honours the capability flags: a plugin without HB_CAP_GRADIENTS is not asked for its
// gradients (this one fails if it is), its losses and state are compared, and the table says what
// was not; as the baseline, it is refused before any backend runs.
TEST(HarnessCheck, ABackendWithoutGradientsIsNotAskedForThem) {
    TempDir dir;
    const std::string config = std::string(HB_TEST_DATA_DIR) + "/no_gradients.yaml";
    const std::string env = "cd " + dir.path().string() + " && XDG_CACHE_HOME=" + (dir / "cache") +
                            " " + fake_plugins_env();
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
    auto rows = harness::output::read_csv(dir / "out.csv");
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

// Any config is checked on a plugin it does not list, with the plugin's defaults, in place of its
// entries and without editing it; such a check records no verdict for the config.
TEST(HarnessCheck, AnyConfigIsCheckedOnAPluginItDoesNotList) {
    TempDir dir;
    // Its entries are `reference` and `perturbed`; the check runs `fake_perturbed` alone.
    const std::string config = std::string(HB_TEST_DATA_DIR) + "/perturbed.yaml";
    const std::string cache = "XDG_CACHE_HOME=" + (dir / "cache");
    auto r = run_harness("check " + config + " --plugin fake_perturbed --quiet",
                         harness::testing::fake_plugins_env() + " " + cache);
    EXPECT_EQ(r.exit_code, 1) << r.output;  // the perturbed gradient
    EXPECT_NE(r.output.find("\nfake_perturbed "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("MISMATCH"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("\nperturbed "), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("\nreference "), std::string::npos) << r.output;
    EXPECT_FALSE(std::filesystem::exists(dir.path() / "cache/harness")) << "a verdict was recorded";
    for (const std::string bad :
         {" --plugin fake_perturbed --backends reference", " --plugin 'Not A Plugin'",
          " --plugin reference --device tpu", " --device cuda:0"}) {
        r = run_harness("check " + config + bad, cache);
        EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.output;
    }
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
                    expected.insert("gradient[2] " + t.name);
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

// Every CPU entry of check.yaml that is built must compute the same step as the reference (the
// other check configs are checked whole, by known_bad_test's CheckConfigs).
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
                                           CpuBackend{"tensorflow-onednn", "tensorflow"},
                                           CpuBackend{"tensorflow-unfused", "tensorflow"}),
                         [](const ::testing::TestParamInfo<CpuBackend>& param) {
                             std::string name = param.param.name;
                             for (char& c : name)
                                 if (c == '-') c = '_';
                             return name;
                         });

}  // namespace
