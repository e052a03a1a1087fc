// `harness check --suite PLUGIN` (harness/check/suite.hpp, docs/conformance.md "The suite"): its
// parts, the configs it writes, its verdict on a known-bad plugin and on the same executor
// without the defect, and its usage errors.
#include "check/suite.hpp"
#include "config/config.hpp"
#include "harness_process.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace {

namespace fs = std::filesystem;
using harness::check::suite_config;
using harness::check::suite_parts;
using harness::testing::run_harness;
using harness::testing::TempDir;

const fs::path kConfigs = fs::path(HB_SOURCE_DIR) / "configs";

std::string read_text(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

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
    TempDir dir;
    for (const auto& part : suite_parts(kConfigs)) {
        SCOPED_TRACE(part.label);
        const std::string text = read_text(part.config);
        const std::string written =
            suite_config(text, part.config.string(), {"tutorial", "cuda:0"});
        const size_t backends = text.find("\nbackends:\n");
        ASSERT_NE(backends, std::string::npos);
        EXPECT_EQ(written.substr(0, backends), text.substr(0, backends));
        const std::string path = dir / part.config.filename().string();
        std::ofstream(path) << written;
        const auto original = harness::config::load_config(part.config.string());
        const auto config = harness::config::load_config(path);
        ASSERT_EQ(config.backends.size(), 1u);
        EXPECT_EQ(config.backends[0].name, "tutorial");
        EXPECT_EQ(config.backends[0].plugin, "tutorial");
        EXPECT_EQ(config.backends[0].device, "cuda:0");
        EXPECT_TRUE(config.backends[0].options.empty());
        EXPECT_EQ(config.model.bn_eps, original.model.bn_eps);
        EXPECT_EQ(config.optimizer.learning_rate, original.optimizer.learning_rate);
        EXPECT_EQ(config.seed, original.seed);
        EXPECT_EQ(config.input_block, original.input_block);
    }
}

TEST(Suite, AConfigWhoseBackendsAreNotLastOrANameYamlMustEscapeIsRefused) {
    const std::string text = "name: x\nbackends:\n  - {name: a, plugin: a}\nrun: {warmup: 1}\n";
    EXPECT_THROW(suite_config(text, "x.yaml", {"tutorial", "cpu"}), std::invalid_argument);
    EXPECT_THROW(suite_config("name: x\n", "x.yaml", {"tutorial", "cpu"}), std::invalid_argument);
    const std::string good = "name: x\nbackends:\n  - {name: a, plugin: a}\n";
    EXPECT_NO_THROW(suite_config(good, "x.yaml", {"tutorial", "cpu"}));
    EXPECT_THROW(suite_config(good, "x.yaml", {"a\"b", "cpu"}), std::invalid_argument);
    EXPECT_THROW(suite_config(good, "x.yaml", {"tutorial", "cuda 0"}), std::invalid_argument);
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
    EXPECT_EQ(run_harness("check --device cpu " + config).exit_code, 2) << "--device needs --suite";
    const auto none = run_harness("check");
    EXPECT_EQ(none.exit_code, 2);
    EXPECT_NE(none.output.find("a config is required, or --suite PLUGIN"), std::string::npos)
        << none.output;
}

}  // namespace
