// `harness check --suite PLUGIN` (harness/check/suite.hpp, docs/conformance.md "The suite"): its
// parts, the configs it writes, its verdict on a known-bad plugin and on the same executor
// without the defect, and its usage errors.
#include "check/suite.hpp"
#include "config/config.hpp"
#include "harness_process.hpp"
#include "hb/options.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using harness::check::suite_parts;
using harness::check::with_backend;
using harness::testing::run_harness;

const fs::path kConfigs = fs::path(HB_SOURCE_DIR) / "configs";

TEST(Suite, ItsPartsAreEveryOneProcessCheckConfigThenTheLayerChecksOfCheckYaml) {
    EXPECT_EQ(harness::check::check_config_folder(), kConfigs);
    const auto parts = suite_parts(kConfigs);
    std::vector<std::string> labels;
    for (const auto& p : parts) labels.push_back(p.label);
    const std::vector<std::string> expected{
        "check-bn-eps", "check-momentum", "check-seed", "check-tensorflow",
        "check-ties",   "check-tiny",     "check",      "check --layers"};
    EXPECT_EQ(labels, expected) << "check-parallel has ranks: it is not one process";
    EXPECT_TRUE(parts.back().layers);
    EXPECT_EQ(parts.back().config, kConfigs / "check.yaml");
}

TEST(Suite, ItsConfigKeepsEverySectionButTheBackendsWhichAreThePluginAlone) {
    for (const auto& part : suite_parts(kConfigs)) {
        SCOPED_TRACE(part.label);
        const auto original = harness::config::load_config(part.config.string());
        const auto config = with_backend(original, {"tutorial", "cuda:0"});
        ASSERT_EQ(config.backends.size(), 1u);
        EXPECT_EQ(config.backends[0].name, "tutorial");
        EXPECT_EQ(config.backends[0].plugin, "tutorial");
        EXPECT_EQ(config.backends[0].device, "cuda:0");
        EXPECT_EQ(config.backends[0].placement, original.placement);
        EXPECT_TRUE(config.backends[0].options.empty());
        EXPECT_EQ(config.sha256, original.sha256);
        EXPECT_EQ(config.model.bn_eps, original.model.bn_eps);
        EXPECT_EQ(config.optimizer.learning_rate, original.optimizer.learning_rate);
        EXPECT_EQ(config.seed, original.seed);
        EXPECT_EQ(config.input_block, original.input_block);
    }
}

// Each value but the default of a boolean or choice option that changes the step is a part, on the
// config the option names; a timing option and an integer one are said to be left, with why.
TEST(Suite, EachValueOfAnOptionThatChangesTheStepIsAPartOnItsConfig) {
    const auto parts = harness::check::option_parts(
        {hb::threads_option(), hb::bool_option("fuse", true, ""),
         hb::checked_on(hb::choice_option("feed", {"a", "b", "c"}, "b", ""), "check-seed"),
         hb::bool_option("either", std::nullopt, ""), hb::int_option("n", 1, 4, 1, "")},
        kConfigs);
    std::vector<std::string> labels;
    for (const auto& p : parts.parts) {
        labels.push_back(p.label);
        ASSERT_TRUE(p.option);
        EXPECT_FALSE(p.layers);
        EXPECT_EQ(p.label.substr(p.label.find(' ') + 1), p.option->first + "=" + p.option->second);
    }
    EXPECT_EQ(labels, (std::vector<std::string>{"check fuse=false", "check-seed feed=a",
                                                "check-seed feed=c", "check either=true",
                                                "check either=false"}));
    EXPECT_EQ(parts.parts[0].config, kConfigs / "check.yaml");
    EXPECT_EQ(parts.parts[1].config, kConfigs / "check-seed.yaml");
    EXPECT_EQ(parts.not_run, (std::vector<std::string>{"threads (timing only)", "n (an integer)"}));
    EXPECT_THROW(harness::check::option_parts(
                     {hb::checked_on(hb::bool_option("x", false, ""), "check-nosuch")}, kConfigs),
                 std::invalid_argument);
}

// A value the plugin answers HB_UNSUPPORTED to on this device (TensorFlow's nchw on the CPU) is
// not implemented here: the part is SKIPPED, saying so, not FAILED.
TEST(Suite, AValueThePluginRefusesHereIsSkippedNotFailed) {
    harness::check::CheckOutcome outcome;
    harness::check::BackendCheck refused;
    refused.run.status = harness::output::Status::failed;
    refused.run.unsupported = true;
    refused.run.message = "tensorflow: create_session: option 'layout': nchw is not supported";
    outcome.checks = {refused};
    const auto result = harness::check::part_result(outcome);
    EXPECT_EQ(result.verdict, "SKIPPED");
    EXPECT_EQ(result.detail, "refused: " + refused.run.message);
    outcome.checks[0].run.unsupported = false;
    EXPECT_EQ(harness::check::part_result(outcome).verdict, "FAILED");
}

TEST(Suite, ANameThatIsNoPluginsOrNoDevicesIsRefused) {
    const auto config = harness::config::load_config((kConfigs / "check-tiny.yaml").string());
    EXPECT_NO_THROW(with_backend(config, {"tutorial", "cpu"}));
    EXPECT_THROW(with_backend(config, {"a\"b", "cpu"}), std::invalid_argument);
    EXPECT_THROW(with_backend(config, {"Tutorial", "cpu"}), std::invalid_argument);
    EXPECT_THROW(with_backend(config, {"tutorial", "cuda 0"}), std::invalid_argument);
    EXPECT_THROW(with_backend(config, {"tutorial", "cuda:01"}), std::invalid_argument);
}

// Batch norm's backward pass with eps doubled passes check-tiny and check.yaml (at half its
// tolerance): the suite's check-bn-eps and its layer checks are what catch it.
TEST(HarnessCheckSuite, AKnownBadPluginIsNotConformant) {
    const auto bad =
        run_harness("check --suite defect_bn_backward_epsilon --quiet",
                    harness::testing::fake_plugins_env(), harness::testing::Stderr::discarded);
    EXPECT_EQ(bad.exit_code, 1) << bad.output;
    EXPECT_NE(bad.output.find("defect_bn_backward_epsilon on cpu: NOT CONFORMANT (check-bn-eps "
                              "MISMATCH"),
              std::string::npos)
        << bad.output;
    EXPECT_NE(bad.output.find("  check-tiny       PASS"), std::string::npos) << bad.output;
}

TEST(HarnessCheckSuite, TheSameExecutorWithoutTheDefectIsConformant) {
    const auto good =
        run_harness("check --suite defect_none --quiet", harness::testing::fake_plugins_env(),
                    harness::testing::Stderr::discarded);
    EXPECT_EQ(good.exit_code, 0) << good.output;
    EXPECT_NE(good.output.find("defect_none on cpu: CONFORMANT (all 8 parts pass)"),
              std::string::npos)
        << good.output;
}

// A defect behind an option's value other than its default passes every part with the defaults,
// and fails the part that sets that value, on the config the option names. A value the plugin
// refuses when its session is created (HB_UNSUPPORTED) is that part SKIPPED, with the reason.
TEST(HarnessCheckSuite, ADefectBehindAnOptionsValueIsNotConformant) {
    const auto bad =
        run_harness("check --suite defect_bn_epsilon_behind_option --quiet",
                    harness::testing::fake_plugins_env(), harness::testing::Stderr::discarded);
    EXPECT_EQ(bad.exit_code, 1) << bad.output;
    EXPECT_NE(bad.output.find("defect_bn_epsilon_behind_option on cpu: NOT CONFORMANT (check-tiny "
                              "approximate_batchnorm=true MISMATCH; 8 of 10 parts pass)"),
              std::string::npos)
        << bad.output;
    EXPECT_NE(bad.output.find("  option values run: approximate_batchnorm=true, "
                              "vector_kernels=true\n"),
              std::string::npos)
        << bad.output;
    const size_t refused = bad.output.find("\n  check-tiny vector_kernels=true ");
    ASSERT_NE(refused, std::string::npos) << bad.output;
    const std::string line =
        bad.output.substr(refused + 1, bad.output.find('\n', refused + 1) - refused - 1);
    EXPECT_NE(line.find(" SKIPPED "), std::string::npos) << line;
    EXPECT_NE(line.find("refused: "), std::string::npos) << line;
    EXPECT_NE(line.find("this executor has no vector kernels"), std::string::npos) << line;
    EXPECT_NE(bad.output.find("  options not checked: threads (timing only)\n"), std::string::npos)
        << bad.output;
}

// check-seed feeds each batch from host memory; a plugin that cannot take it from there runs
// that part with its batches on the device, and the suite says so.
TEST(HarnessCheckSuite, APluginWithoutHostPlacementRunsCheckSeedOnTheDevice) {
    const auto r =
        run_harness("check --suite fake_good --quiet", harness::testing::fake_plugins_env(),
                    harness::testing::Stderr::discarded);
    EXPECT_NE(r.exit_code, 2) << r.output;
    const size_t line = r.output.find("\n  check-seed ");
    ASSERT_NE(line, std::string::npos) << r.output;
    const std::string seed = r.output.substr(line + 1, r.output.find('\n', line + 1) - line - 1);
    EXPECT_NE(seed.find("batches on the device: the plugin cannot take them from host memory"),
              std::string::npos)
        << seed;
}

// The smallest complete backend, its kernels alone on hb::HostSession (plugins/loops/), is the
// example docs/writing-a-plugin.md starts from: it must stay conformant.
TEST(HarnessCheckSuite, TheLoopsExampleIsConformant) {
    const auto loops =
        run_harness("check --suite loops --quiet", "", harness::testing::Stderr::discarded);
    EXPECT_EQ(loops.exit_code, 0) << loops.output;
    EXPECT_NE(loops.output.find("loops on cpu: CONFORMANT (all 8 parts pass)"), std::string::npos)
        << loops.output;
}

TEST(HarnessCheckSuite, BadArgumentsAreUsageErrorsAndNothingRuns) {
    const auto missing = run_harness("check --suite nosuch");
    EXPECT_EQ(missing.exit_code, 2);
    EXPECT_NE(missing.output.find("no plugin 'nosuch' (hb_nosuch.so) on the plugin path"),
              std::string::npos)
        << missing.output;
    EXPECT_EQ(missing.output.find("== suite part"), std::string::npos) << missing.output;

    const std::string config = (kConfigs / "check.yaml").string();
    EXPECT_EQ(run_harness("check --suite reference " + config).exit_code, 2);
    EXPECT_EQ(run_harness("check --suite reference --backends reference").exit_code, 2);
    EXPECT_EQ(run_harness("check --suite reference --json").exit_code, 2);
    EXPECT_EQ(run_harness("check --suite reference --layers").exit_code, 2);
    EXPECT_EQ(run_harness("check --suite 'a b'").exit_code, 2);
    EXPECT_EQ(run_harness("check --device cpu " + config).exit_code, 2)
        << "--device goes with --suite or --plugin";
    const auto none = run_harness("check");
    EXPECT_EQ(none.exit_code, 2);
    EXPECT_NE(none.output.find("a config is required, or --suite PLUGIN"), std::string::npos)
        << none.output;
}

}  // namespace
