// The conformance check's own regression suite. Known-bad backends (tests/defect_plugins: the
// reference's kernels, each with one deliberate defect) must be called MISMATCH by `harness check`
// on the check configs, with the quantity where the defect lives out of bounds and the quantities
// it cannot touch within them; the defect-free build of the same executor, the reference and
// every CPU backend that is built must pass the same configs.
#include "harness_process.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using harness::testing::run_harness;
using harness::testing::TempDir;

struct Defect {
    std::string name;  // the plugin is defect_<name>
    // Each must match (as a prefix) at least one quantity out of bounds.
    std::vector<std::string> caught_by;
    // No quantity out of bounds may start with one of these.
    std::vector<std::string> untouched;
    // When set, every quantity out of bounds must end with this.
    std::string only_suffix;
    // The worst quantity's error over its tolerance must reach this: caught clearly, not barely.
    double clearly = 1;
};

struct CheckConfig {
    std::string file;  // under configs/
    std::vector<Defect> defects;
    friend std::ostream& operator<<(std::ostream& out, const CheckConfig& c) {
        return out << c.file;
    }
};

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// The config with the defect plugins appended to its `backends:` list (its last section).
std::string with_defects(const std::string& config, const std::vector<Defect>& defects) {
    std::string text = config;
    if (!text.empty() && text.back() != '\n') text += '\n';
    std::vector<std::string> names = {"none"};
    for (const Defect& d : defects) names.push_back(d.name);
    for (const auto& name : names)
        text += "  - {name: defect_" + name + ", plugin: defect_" + name + "}\n";
    return text;
}

std::vector<std::string> out_of_bounds(const nlohmann::json& backend) {
    std::vector<std::string> names;
    for (const auto& d : backend.at("differences"))
        if (d.at("determined").get<bool>() &&
            !(d.at("relative").get<double>() <= d.at("tolerance").get<double>()))
            names.push_back(d.at("quantity").get<std::string>());
    return names;
}

bool starts_with(const std::string& s, const std::string& prefix) {
    return s.rfind(prefix, 0) == 0;
}

std::string joined(const std::vector<std::string>& names) {
    std::string s;
    for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
    return s.empty() ? "none" : s;
}

// "check-tiny.yaml" -> "checktiny": a GoogleTest parameter name.
std::string test_name(const std::string& file) {
    std::string name;
    for (char ch : file.substr(0, file.find('.')))
        if (std::isalnum(static_cast<unsigned char>(ch))) name += ch;
    return name;
}

class KnownBadBackends : public ::testing::TestWithParam<CheckConfig> {};

TEST_P(KnownBadBackends, AreMismatchesNamedByTheirOwnQuantity) {
    const CheckConfig& c = GetParam();
    TempDir dir;
    const std::string config = dir / c.file;
    std::ofstream(config) << with_defects(
        read_text(harness::testing::shipped_config(c.file)), c.defects);
    std::string backends = "defect_none";
    for (const Defect& d : c.defects) backends += ",defect_" + d.name;

    const auto r =
        run_harness("check " + config + " --json --backends " + backends,
                    "cd " + dir.path().string() + " && " + harness::testing::fake_plugins_env(),
                    harness::testing::Stderr::discarded);
    const auto j = nlohmann::json::parse(r.output, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r.output;
    ASSERT_EQ(j.at("baseline_problem"), "") << r.output;
    ASSERT_EQ(j.at("backends").size(), c.defects.size() + 1) << r.output;

    const auto& control = j["backends"][0];
    EXPECT_EQ(control.at("verdict"), "PASS")
        << "the defect-free executor, out of bounds: " << joined(out_of_bounds(control));

    for (size_t i = 0; i < c.defects.size(); ++i) {
        const Defect& d = c.defects[i];
        const auto& b = j["backends"][i + 1];
        ASSERT_EQ(b.at("backend"), "defect_" + d.name);
        const std::vector<std::string> flagged = out_of_bounds(b);
        SCOPED_TRACE("defect " + d.name + ", out of bounds: " + joined(flagged));
        EXPECT_EQ(b.at("verdict"), "MISMATCH");
        EXPECT_GE(b.at("worst_relative").at("relative").get<double>(),
                  d.clearly * b.at("worst_relative").at("tolerance").get<double>());
        for (const auto& expected : d.caught_by) {
            bool found = false;
            for (const auto& q : flagged) found = found || starts_with(q, expected);
            EXPECT_TRUE(found) << "nothing out of bounds starts with '" << expected << "'";
        }
        for (const auto& q : flagged) {
            for (const auto& spared : d.untouched)
                EXPECT_FALSE(starts_with(q, spared)) << q << " is out of bounds";
            if (!d.only_suffix.empty()) {
                EXPECT_TRUE(q.size() >= d.only_suffix.size() &&
                            q.compare(q.size() - d.only_suffix.size(), std::string::npos,
                                      d.only_suffix) == 0)
                    << q << " is out of bounds";
            }
        }
    }
}

// A defect of the backward pass leaves the first loss alone; one of the optimizer leaves every
// step-1 gradient alone too. The last stack's head (stack1.out) is downstream of every value
// used twice and of every max pool.
const std::vector<std::string> kForwardIntact = {"loss[1]", "gradient stack1.out."};
const std::vector<std::string> kStepIntact = {"loss[1]", "gradient "};

INSTANTIATE_TEST_SUITE_P(
    CheckConfigs, KnownBadBackends,
    ::testing::Values(
        CheckConfig{"check-tiny.yaml",
                    {{"dropped_accumulation", {"gradient pre.conv.weight"}, kForwardIntact, ""},
                     {"bn_epsilon", {"loss[1]", "gradient "}, {}, ""},
                     {"biased_running_var", {"state"}, {}, ".running_var"},
                     {"bias_gradient_before_bn",
                      {"gradient stack0.out.bias"},
                      {"loss[1]", "gradient stack0.out.weight", "gradient stack1."},
                      ""},
                     {"frozen_tensor", {"update stack0.res.conv2.weight"}, kStepIntact, ""},
                     {"frozen_tail", {"update stack0.res.conv2.weight"}, kStepIntact, ""},
                     {"rmsprop_eps", {"update "}, kStepIntact, ""}}},
        CheckConfig{"check.yaml", {{"biased_running_var", {"state"}, {}, ".running_var"}}},
        CheckConfig{"check-bn-eps.yaml",
                    {{"bn_backward_epsilon", {"gradient "}, {"loss[1]"}, "", 100}}},
        CheckConfig{"check-ties.yaml",
                    {{"last_max_pooling", {"gradient input"}, {}, "gradient input"}}},
        CheckConfig{"check-momentum.yaml",
                    {{"rmsprop_momentum", {"update "}, kStepIntact, ""},
                     {"rmsprop_weight_decay", {"update "}, kStepIntact, ""},
                     {"frozen_tensor", {"update stack0.res.conv2.weight"}, kStepIntact, ""}}},
        CheckConfig{"check-tensorflow.yaml",
                    {{"rmsprop_variant", {"update "}, kStepIntact, ""},
                     {"frozen_tensor", {"update stack0.res.conv2.weight"}, kStepIntact, ""}}}),
    [](const ::testing::TestParamInfo<CheckConfig>& param) { return test_name(param.param.file); });

// Layer by layer (`harness check --layers`): a defect of the batch norm fails the batch-norm
// configurations alone, and the summary by kind names that kind and no other; the defect-free
// executor passes them all.
TEST(LayerByLayer, ADefectFailsTheLayerKindItBreaksAndTheSummaryNamesIt) {
    TempDir dir;
    const std::string config = dir / "check-tiny.yaml";
    std::ofstream(config) << with_defects(
        read_text(std::string(HB_SOURCE_DIR) + "/configs/check-tiny.yaml"),
        {{"bn_epsilon", {}, {}, ""}});
    const auto r =
        run_harness("check " + config +
                        " --json --backends defect_none,defect_bn_epsilon --layers "
                        "'^(batchnorm\\+relu/c8/4x4|conv3x3/s1/c4-4/4x4|add2/c8/4x4|maxpool2d/c8)'",
                    "cd " + dir.path().string() + " && " + harness::testing::fake_plugins_env(),
                    harness::testing::Stderr::discarded);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    const auto j = nlohmann::json::parse(r.output, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r.output;
    ASSERT_EQ(j.at("configurations").size(), 4u) << r.output;
    for (const auto& c : j["configurations"]) {
        const bool batchnorm = c.at("kind") == "batchnorm+relu";
        ASSERT_EQ(c.at("backends").size(), 2u);
        EXPECT_EQ(c["backends"][0].at("verdict"), "PASS") << c.at("name");
        const auto& defect = c["backends"][1];
        EXPECT_EQ(defect.at("verdict"), batchnorm ? "MISMATCH" : "PASS")
            << c.at("name") << ", out of bounds: " << joined(out_of_bounds(defect));
    }
    std::set<std::string> failing;
    for (const auto& s : j.at("summary"))
        if (s.at("failed").get<int>() > 0)
            failing.insert(s.at("kind").get<std::string>() + " " +
                           s.at("backend").get<std::string>());
    EXPECT_EQ(failing, std::set<std::string>{"batchnorm+relu defect_bn_epsilon"});
}

// Every check config, with every entry whose plugin is built here: a PASS for each, or SKIPPED.
class CheckConfigs : public ::testing::TestWithParam<std::string> {};

TEST_P(CheckConfigs, EveryBuiltCpuBackendPasses) {
    TempDir dir;
    const auto r = run_harness("check " + harness::testing::shipped_config(GetParam()),
                               "cd " + dir.path().string() + " &&");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output.find("MISMATCH"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("PASS"), std::string::npos) << r.output;
}

INSTANTIATE_TEST_SUITE_P(Configs, CheckConfigs,
                         ::testing::Values("check-tiny.yaml", "check-bn-eps.yaml",
                                           "check-ties.yaml",
                                           "check-momentum.yaml", "check-tensorflow.yaml",
                                           "check-seed.yaml"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                             return test_name(param.param);
                         });

}  // namespace
