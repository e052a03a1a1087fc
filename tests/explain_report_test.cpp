// `harness report --explain`: each entry paired with its base (the first entry of its config,
// plugin and device), what it changes, and what one change costs (docs/statistics.md).
#include "report/explain_report.hpp"
#include "results_samples.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

harness::output::CsvRow row(const std::string& backend, const std::string& options, double median,
                            const std::string& plugin = "onednn") {
    return {{"config_name", "ablation"},
            {"config_sha256", "ablation-sha"},
            {"backend", backend},
            {"plugin", plugin},
            {"device", "cpu"},
            {"options", options},
            {"placement", "device"},
            {"math_mode", "fp32"},
            {"status", "ok"},
            {"median_ms", std::to_string(median)},
            {"utc_time", "2026-11-30T12:00:00Z"}};
}

std::vector<double> steps(double center, double half_width) {
    return harness::testing::evenly_spread(center, half_width, 11);
}

std::vector<std::string> texts(const std::vector<harness::report::Change>& changes) {
    std::vector<std::string> out;
    for (const auto& c : changes) out.push_back(harness::report::to_string(c));
    return out;
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

void expect_has(const std::string& md, const std::string& part) {
    EXPECT_TRUE(contains(md, part)) << md;
}

TEST(ExplainChanges, OneOptionValue) {
    const auto changes = harness::report::changes(row("a", "fuse=true;threads=2", 1),
                                                  row("b", "fuse=false;threads=2", 1));
    EXPECT_EQ(texts(changes), std::vector<std::string>{"fuse: true → false"});
}

TEST(ExplainChanges, AnOptionSetInOnlyOneIsAChangeFromTheDefault) {
    EXPECT_EQ(texts(harness::report::changes(row("a", "threads=2", 1),
                                             row("b", "layout=nhwc;threads=2", 1))),
              std::vector<std::string>{"layout: (default) → nhwc"});
    EXPECT_EQ(texts(harness::report::changes(row("a", "layout=nhwc", 1), row("b", "", 1))),
              std::vector<std::string>{"layout: nhwc → (default)"});
}

TEST(ExplainChanges, SeveralAndNone) {
    harness::output::CsvRow entry = row("b", "fuse=false;threads=4", 1);
    entry["placement"] = "host";
    EXPECT_EQ(texts(harness::report::changes(row("a", "fuse=true;threads=2", 1), entry)),
              (std::vector<std::string>{"fuse: true → false", "threads: 2 → 4",
                                        "placement: device → host"}));
    EXPECT_TRUE(
        harness::report::changes(row("a", "threads=2", 1), row("b", "threads=2", 2)).empty());
}

TEST(ExplainChanges, Placement) {
    harness::output::CsvRow entry = row("b", "threads=2", 1);
    entry["placement"] = "host";
    EXPECT_EQ(texts(harness::report::changes(row("a", "threads=2", 1), entry)),
              std::vector<std::string>{"placement: device → host"});
}

TEST(ExplainChanges, MathModeCountsOnlyWhenNoOptionExplainsIt) {
    harness::output::CsvRow tf32 = row("b", "threads=2", 1);
    tf32["math_mode"] = "tf32";
    EXPECT_EQ(texts(harness::report::changes(row("a", "threads=2", 1), tf32)),
              std::vector<std::string>{"math_mode: fp32 → tf32"});
    // The option that asks for it is the change; the math mode is what it brings.
    tf32["options"] = "math=tf32;threads=2";
    EXPECT_EQ(texts(harness::report::changes(row("a", "threads=2", 1), tf32)),
              std::vector<std::string>{"math: (default) → tf32"});
}

TEST(ExplainChanges, OptionsColumnIsParsed) {
    const auto options = harness::report::options_of(row("a", "a=1;b=;c=x=y", 1));
    EXPECT_EQ(options, (std::map<std::string, std::string>{{"a", "1"}, {"b", ""}, {"c", "x=y"}}));
    EXPECT_TRUE(harness::report::options_of(row("a", "", 1)).empty());
}

TEST(ExplainBase, IsTheFirstEntryOfThePluginAndDevice) {
    harness::report::ResultsFile f;
    f.rows = {row("onednn", "threads=2", 100), row("torch", "threads=2", 200, "libtorch"),
              row("onednn-unfused", "fuse=false;threads=2", 110),
              row("torch-cl", "channels_last=true;threads=2", 190, "libtorch")};
    f.rows.push_back(row("onednn-gpu", "", 1));
    f.rows.back()["device"] = "gpu:0";
    EXPECT_EQ(harness::report::base_of(f, f.rows[0]), nullptr);
    EXPECT_EQ(harness::report::base_of(f, f.rows[1]), nullptr);
    EXPECT_EQ(harness::report::base_of(f, f.rows[2]), &f.rows[0]);
    EXPECT_EQ(harness::report::base_of(f, f.rows[3]), &f.rows[1]);
    EXPECT_EQ(harness::report::base_of(f, f.rows[4]),
              nullptr);  // another device: a base of its own
}

// A synthetic results file and its steps: the base at 100 ms, one change that costs 10 ms, one
// that costs nothing measurable, one entry that changes two things and one that failed.
harness::report::ResultsFile ablation() {
    harness::report::ResultsFile f;
    f.rows = {row("base", "fuse=true;threads=2", 100), row("unfused", "fuse=false;threads=2", 110),
              row("host", "fuse=true;threads=2", 100.2), row("both", "fuse=false;threads=2", 111),
              row("broken", "fuse=true;threads=2;profile=true", 0)};
    f.rows[2]["placement"] = "host";
    f.rows[3]["placement"] = "host";
    f.rows[4]["status"] = "failed";
    f.rows[4]["message"] = "out of memory";
    f.steps_ms = {{"base", steps(100, 4)},
                  {"unfused", steps(110, 4)},
                  {"host", steps(100.2, 10)},
                  {"both", steps(111, 4)}};
    return f;
}

TEST(ExplainReport, EachSingleChangeWithItsCostAndInterval) {
    const std::string md = harness::report::explain_report({ablation()});
    expect_has(md, "| config | entry | base | change | base ms | entry ms |");
    expect_has(md,
               "| ablation | unfused | base | fuse: true → false | 100.00 | 110.00 | "
               "+10.00 [+");
    expect_has(md, " | +10.0% [+");
    expect_has(md, "%] | 1 | slower |\n");
    expect_has(md,
               "| ablation | host | base | placement: device → host | 100.00 | "
               "100.20 | +0.20 [-");
    expect_has(md, "| 1 | no significant difference |\n");
    EXPECT_FALSE(contains(md, "| ablation | base | base |")) << md;  // a base is no entry
}

TEST(ExplainReport, SeveralChangesAreNotComparableAndFailuresAreNotTimed) {
    const std::string md = harness::report::explain_report({ablation()});
    expect_has(md, "Not comparable with their base");
    expect_has(md,
               "| ablation | both | base | fuse: true → false; placement: device → "
               "host |\n");
    expect_has(md, "Not timed:");
    expect_has(md,
               "| ablation | broken | base | profile: (default) → true | broken "
               "failed: out of memory |\n");
}

TEST(ExplainReport, WithoutStepsTheCostIsOfTheMedians) {
    harness::report::ResultsFile f = ablation();
    f.steps_ms.clear();
    const std::string md = harness::report::explain_report({f});
    expect_has(md, "| fuse: true → false | 100.00 | 110.00 | +10.00 | +10.0% | 1 |  |\n");
}

TEST(ExplainReport, RoundsAreCombined) {
    harness::report::ResultsFile second = ablation();
    second.rows[0]["median_ms"] = "200";
    second.rows[1]["median_ms"] = "220";
    second.steps_ms["base"] = steps(200, 4);
    second.steps_ms["unfused"] = steps(220, 4);
    const std::string md = harness::report::explain_report({ablation(), second});
    // Medians: the mean over the rounds; the cost: the mean of the rounds' differences; the %:
    // the geometric mean of their ratios (both 1.1).
    expect_has(md, "| fuse: true → false | 150.00 | 165.00 | +15.00 [");
    // Both rounds' ratio is 1.1; their differences, 10 and 20 ms, disagree.
    expect_has(md, " | +10.0% [+10.0%, +10.0%] | 2 | slower |\n");
}

// An entry of another config that the first config given also has is compared with it, round k
// with round k: what the configs' difference (the model, say) costs that backend.
TEST(ExplainReport, AnEntryOfAnotherConfigIsComparedWithTheFirstConfigsEntryOfItsName) {
    auto other = [](double median) {
        harness::report::ResultsFile f;
        harness::output::CsvRow r = row("base", "fuse=true;threads=2", median);
        r["config_name"] = "original";
        r["config_sha256"] = "original-sha";
        f.rows = {r};
        f.steps_ms = {{"base", steps(median, 4)}};
        return f;
    };
    const std::string md =
        harness::report::explain_report({ablation(), ablation(), other(150), other(151)});
    expect_has(md, "| original | base | base | config: ablation → original | 100.00 | 150.50 | +50.50 [+");
    expect_has(md, "%] | 2 | slower |\n");
    // Without a round of the first config to pair it with, a round is left out.
    const std::string one = harness::report::explain_report({ablation(), other(150), other(151)});
    expect_has(one, "| original | base | base | config: ablation → original | 100.00 | 150.00 | ");
}

}  // namespace
