// The Markdown report of `harness report`: the ratios to the baseline, with their intervals and
// p-values where the steps are known, per round and over rounds and configs (docs/statistics.md).
#include "report/markdown_report.hpp"
#include "results_samples.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

harness::output::CsvRow row(const std::string& config, const std::string& backend, double median,
                            const std::string& status = "ok") {
    return {{"config_name", config},
            {"config_sha256", config + "-sha"},
            {"backend", backend},
            {"device", "cpu"},
            {"status", status},
            {"median_ms", std::to_string(median)},
            {"utc_time", "2026-11-30T12:00:00Z"}};
}

// 11 steps spread evenly over [center - half_width, center + half_width].
std::vector<double> steps(double center, double half_width) {
    return harness::testing::evenly_spread(center, half_width, 11);
}

// One file of config `config`: the baseline "base" at 100 ms and "slow" at `slow` ms.
harness::report::ResultsFile round_of(const std::string& config, double slow, double spread = 4) {
    harness::report::ResultsFile f;
    f.rows = {row(config, "base", 100), row(config, "slow", slow)};
    f.steps_ms = {{"base", steps(100, spread)}, {"slow", steps(slow, spread)}};
    return f;
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// The header names each config with its own hash, and says when the report spans several.
TEST(MarkdownReport, TheHeaderNamesEveryConfigWithItsOwnHash) {
    using Rows = std::vector<harness::output::CsvRow>;
    const std::string one = harness::report::markdown_report(
        Rows{row("ex1", "base", 100), row("ex1", "slow", 200)}, {"", 0});
    EXPECT_TRUE(contains(one, "- config: ex1 (sha256 ex1-sha)\n")) << one;
    const std::string two = harness::report::markdown_report(
        Rows{row("ex2", "base", 100), row("ex1", "base", 100), row("ex2", "slow", 200)}, {"", 0});
    EXPECT_TRUE(contains(two,
                         "- configs: ex2 (sha256 ex2-sha), ex1 (sha256 ex1-sha): this report "
                         "compares across configs; each ratio is within one\n"))
        << two;
}

TEST(MarkdownReport, WithoutStepsTheRatioIsOfTheMedians) {
    const std::string md = harness::report::markdown_report(
        std::vector<harness::output::CsvRow>{row("tiny", "base", 100), row("tiny", "slow", 200),
                                             row("tiny", "broken", 0, "failed")},
        {"base", 0});
    EXPECT_TRUE(contains(md, "| vs base |\n")) << md;
    EXPECT_TRUE(contains(md, "| base | cpu | ok |")) << md;
    EXPECT_TRUE(contains(md, " 1.00x |\n")) << md;
    EXPECT_TRUE(contains(md, " 2.00x |\n")) << md;
    EXPECT_TRUE(contains(md, "| broken | cpu | failed |")) << md;
    EXPECT_FALSE(contains(md, "[")) << md;
    EXPECT_FALSE(contains(md, "bootstrap")) << md;
}

// The worker's CPU time over the wall time, where the row has it (not in files from before).
TEST(MarkdownReport, ShowsCpuTimeOverWallTime) {
    harness::output::CsvRow busy = row("tiny", "busy", 100);
    busy["cpu_ms"] = "195";
    const std::string md = harness::report::markdown_report(
        std::vector<harness::output::CsvRow>{busy, row("tiny", "old", 100)}, {"", 0});
    EXPECT_TRUE(contains(md, "| IQR ms | CPU/wall |")) << md;
    EXPECT_TRUE(contains(md, "| 1.95 |")) << md;
    EXPECT_TRUE(contains(md, "| old | cpu | ok |")) << md;
}

TEST(MarkdownReport, ADataParallelBackendIsTheBaselineAtEachRankCount) {
    auto ranked = [](const std::string& backend, int ranks, double median) {
        harness::output::CsvRow r = row("tiny", backend, median);
        r["ranks"] = std::to_string(ranks);
        return r;
    };
    const std::vector<harness::output::CsvRow> rows = {
        ranked("base", 1, 100), ranked("base", 2, 110), ranked("slow", 1, 200),
        ranked("slow", 2, 330)};
    const std::string by_backend = harness::report::markdown_report(rows, {"base", 0});
    EXPECT_TRUE(contains(by_backend, "| slow (1 rank) | cpu | ok |")) << by_backend;
    EXPECT_TRUE(contains(by_backend, " 2.00x |\n")) << by_backend;
    EXPECT_TRUE(contains(by_backend, " 3.00x |\n")) << by_backend;  // against base (2 ranks)
    const std::string by_row = harness::report::markdown_report(rows, {"base (1 rank)", 0});
    EXPECT_TRUE(contains(by_row, " 1.10x |\n")) << by_row;
    EXPECT_TRUE(contains(by_row, " 3.30x |\n")) << by_row;
}

TEST(MarkdownReport, WithStepsTheRatioHasItsIntervalAndP) {
    const std::string md = harness::report::markdown_report({round_of("tiny", 150)}, {"base", 0});
    // 11 steps against 11, none tied and none overlapping: the exact p is 2 / C(22, 11).
    EXPECT_TRUE(contains(md, " 1.500x [1.457, 1.545], p < 0.001 |\n")) << md;
    EXPECT_TRUE(contains(md, " 1.00x |\n")) << md;  // the baseline itself
    EXPECT_TRUE(contains(md, "[95% bootstrap interval], p: Mann-Whitney U test")) << md;
    // One round of one config: nothing more to say below the table.
    EXPECT_FALSE(contains(md, "over every round")) << md;
}

TEST(MarkdownReport, AnIntervalHoldingOneIsNoSignificantDifference) {
    const std::string md =
        harness::report::markdown_report({round_of("tiny", 100.2, 10)}, {"base", 0});
    EXPECT_TRUE(contains(md, " 1.002x [0.9")) << md;
    EXPECT_TRUE(contains(md, ", no significant difference |\n")) << md;
}

TEST(MarkdownReport, EachRoundIsComparedWithItsOwnBaselineAndAllRoundsTogether) {
    // The second round ran on a slower machine: its baseline too.
    harness::report::ResultsFile second = round_of("tiny", 300);
    second.rows[0] = row("tiny", "base", 200);
    second.steps_ms["base"] = steps(200, 4);
    const std::string md = harness::report::markdown_report(
        {round_of("tiny", 150), second, round_of("tiny", 160)}, {"base", 0});
    EXPECT_TRUE(contains(md, " 1.500x [1.478, 1.522]")) << md;  // 300 / 200, not 300 / 100
    EXPECT_FALSE(contains(md, " 3.00x")) << md;
    EXPECT_TRUE(contains(md, "**Against base over every round given**")) << md;
    EXPECT_TRUE(contains(md, "| config | backend | rounds | vs base [95% interval] | p | |\n"))
        << md;
    // The geometric mean of 1.5, 1.5 and 1.6; three rounds: Student's t(0.975, 2) = 4.30 times
    // the standard error of their log ratios either side.
    EXPECT_TRUE(contains(md, "| tiny | slow | 3 | 1.533x [1.397, 1.681]")) << md;
    EXPECT_TRUE(contains(md, "| < 0.001 | slower |\n")) << md;
    EXPECT_FALSE(contains(md, "| geometric mean of")) << md;  // one config
}

TEST(MarkdownReport, SeveralConfigsGetAGeometricMean) {
    const std::string md =
        harness::report::markdown_report({round_of("hg2", 200), round_of("hg8", 50)}, {"base", 0});
    EXPECT_TRUE(contains(md, "| hg2 | slow | 1 | 2.000x [")) << md;
    EXPECT_TRUE(contains(md, "| hg8 | slow | 1 | 0.500x [")) << md;
    EXPECT_TRUE(contains(md, "| geometric mean of 2 configs | slow | | 1.000x [")) << md;
    EXPECT_TRUE(contains(md, "] | | no significant difference |\n")) << md;
}

TEST(MarkdownReport, RowsWithoutTheirStepsKeepThePlainRatio) {
    harness::report::ResultsFile f = round_of("tiny", 150);
    f.steps_ms.erase("slow");
    const std::string md = harness::report::markdown_report({f}, {"base", 0});
    EXPECT_TRUE(contains(md, " 1.50x |\n")) << md;
    EXPECT_FALSE(contains(md, "[")) << md;
}

}  // namespace
