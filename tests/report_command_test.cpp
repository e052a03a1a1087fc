// `harness report` from the outside: the Markdown table with its ratios, `--explain`, the charts,
// and a CSV that is not a run refused.
#include "harness_process.hpp"
#include "output/csv_reader.hpp"
#include "output/csv_reporter.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

namespace {

namespace fs = std::filesystem;
using harness::testing::run_harness;
using harness::testing::shipped_config;
using harness::testing::TempDir;

TEST(EndToEnd, ReportTurnsCsvsIntoAMarkdownTableWithRatios) {
    TempDir dir;
    ASSERT_EQ(run_harness("run " + shipped_config("check.yaml") +
                          " --backends reference,reference-1thread --iterations 2 --output " +
                          (dir / "a.csv"))
                  .exit_code,
              0);
    auto r = run_harness("report " + (dir / "a.csv") + " --baseline reference");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("| backend | device | status |"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("vs reference |"), std::string::npos) << r.output;
    // Timing noise may append " (noisy)" to the status.
    EXPECT_NE(r.output.find("| reference | cpu | ok"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(" 1.00x |"), std::string::npos) << r.output;
    // The other row, from its steps in the JSON sidecar: an interval and a p-value.
    EXPECT_NE(r.output.find("| reference-1thread | cpu | ok"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("x ["), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("], p = "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("[95% bootstrap interval]"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("- config: check"), std::string::npos) << r.output;

    // Each row's rate as a fraction of the machine's attainable rate; that rate must be positive.
    r = run_harness("report " + (dir / "a.csv") + " --attainable 1000");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("| of 1000.0 GFLOP/s |"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("% |"), std::string::npos) << r.output;
    EXPECT_EQ(run_harness("report " + (dir / "a.csv") + " --attainable -3").exit_code, 2);

    ASSERT_EQ(run_harness("report " + (dir / "a.csv") + " --output " + (dir / "a.md")).exit_code,
              0);
    EXPECT_TRUE(fs::exists(dir / "a.md"));
    EXPECT_EQ(run_harness("report " + (dir / "missing.csv")).exit_code, 2);

    // A broken sidecar leaves the rows, compared without intervals.
    std::ofstream(dir.path() / "a.json") << "{";
    r = run_harness("report " + (dir / "a.csv") + " --baseline reference");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("compared without intervals"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("x ["), std::string::npos) << r.output;
}

// A CSV of another schema, or one of harness layers, is refused naming the file and what it
// lacks (exit 2), not turned into a table of blank cells; a results CSV of the first schema-1
// layout (its first 47 columns) is still read.
TEST(EndToEnd, ReportRefusesACsvThatIsNotARunsNamingWhatItLacks) {
    TempDir dir;
    std::ofstream(dir.path() / "other.csv") << "name,score,when\nx,1,today\n";
    auto r = run_harness("report " + (dir / "other.csv"));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("harness report: " + (dir / "other.csv") +
                            ": not a results CSV of harness run: 47 of its columns missing "
                            "(schema_version, utc_time,"),
              std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("| backend |"), std::string::npos) << r.output;

    r = run_harness("report " + std::string(HB_SOURCE_DIR) + "/results/cpu/layers-hourglass2.csv");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("layers-hourglass2.csv: a CSV of harness layers, not of harness run"),
              std::string::npos)
        << r.output;

    r = run_harness("report " + std::string(HB_SOURCE_DIR) + "/results/h200/hourglass8-round1.csv");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("| backend |"), std::string::npos) << r.output;
}

// An ablation: a base entry, entries that change one thing (an option, the placement) and one that
// changes two; `report --explain` prices each single change and names what the other changes.
TEST(EndToEnd, ReportExplainsWhatEachChangeCosts) {
    TempDir dir;
    const std::string yaml = dir / "ablation.yaml";
    std::ofstream(yaml)
        << R"(model: {stacks: 1, features: 16, depth: 1, joints: 4, input_size: 32, batch: 2}
run: {warmup: 1, iterations: 3}
backends:
  - plugin: reference
    options: {threads: 1}
  - plugin: reference
    name: two-threads
    options: {threads: 2}
  - plugin: reference
    name: host
    placement: host
    options: {threads: 1}
  - plugin: reference
    name: both
    placement: host
    options: {threads: 2}
)";
    ASSERT_EQ(run_harness("run " + yaml + " --output " + (dir / "a.csv")).exit_code, 0);
    const auto rows = harness::output::read_csv(dir / "a.csv");
    ASSERT_EQ(rows.size(), 4u);
    EXPECT_EQ(rows[1].at("placement"), "device");
    EXPECT_EQ(rows[2].at("placement"), "host");

    const auto r = run_harness("report " + (dir / "a.csv") + " --explain");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("**What each change costs**"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("| ablation | two-threads | reference | threads: 1 → 2 |"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("| ablation | host | reference | placement: device → host |"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("| ablation | both | reference | threads: 1 → 2; placement: device → "
                            "host |"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("% ["), std::string::npos) << r.output;  // intervals from the sidecar
}

bool gnuplot_installed() {
    return std::system("command -v gnuplot >/dev/null 2>&1") == 0;
}

TEST(EndToEnd, ReportDrawsChartsAndLinksThemFromTheMarkdown) {
    if (!gnuplot_installed()) GTEST_SKIP() << "gnuplot is not installed (gnuplot-nox)";
    TempDir dir;
    ASSERT_EQ(run_harness("run " + shipped_config("tiny.yaml") +
                          " --iterations 3 --profile-steps 1 --output " + (dir / "t.csv"))
                  .exit_code,
              0);
    auto r = run_harness("report " + (dir / "t.csv") + " --charts " + (dir / "out/charts") +
                         " --output " + (dir / "out/t.md"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    for (const char* chart :
         {"tiny-step-time", "tiny-phases", "tiny-samples", "tiny-attribution", "tiny-roofline"}) {
        for (const char* extension : {".dat", ".gp", ".svg"})
            EXPECT_TRUE(fs::exists(dir.path() / "out/charts" / (std::string(chart) + extension)))
                << chart << extension;
        std::ifstream svg(dir.path() / "out/charts" / (std::string(chart) + ".svg"));
        const std::string text((std::istreambuf_iterator<char>(svg)),
                               std::istreambuf_iterator<char>());
        EXPECT_NE(text.find("<svg"), std::string::npos) << chart;
    }
    std::ifstream md(dir.path() / "out/t.md");
    const std::string markdown((std::istreambuf_iterator<char>(md)),
                               std::istreambuf_iterator<char>());
    // Paths relative to the Markdown file.
    EXPECT_NE(markdown.find("](charts/tiny-step-time.svg)"), std::string::npos) << markdown;
    EXPECT_NE(markdown.find("](charts/tiny-samples.svg)"), std::string::npos) << markdown;
    EXPECT_NE(markdown.find("](charts/tiny-roofline.svg)"), std::string::npos) << markdown;
}

TEST(EndToEnd, ReportChartsWithoutGnuplotSayWhatIsMissing) {
    TempDir dir;
    ASSERT_EQ(run_harness("run " + shipped_config("tiny.yaml") + " --iterations 2 --output " +
                          (dir / "t.csv"))
                  .exit_code,
              0);
    auto r = run_harness("report " + (dir / "t.csv") + " --charts " + (dir / "charts"),
                         "PATH=" + (dir / "empty"));
    EXPECT_EQ(r.exit_code, 3) << r.output;  // the charts could not be drawn
    EXPECT_NE(r.output.find("gnuplot not found"), std::string::npos) << r.output;
    // The data and scripts are there to draw by hand.
    EXPECT_TRUE(fs::exists(dir.path() / "charts/tiny-step-time.gp"));
    EXPECT_TRUE(fs::exists(dir.path() / "charts/tiny-step-time.dat"));
}

// The every-step and attribution charts are drawn from the sidecar: without it, the report says
// which charts leave out which file's runs, and why.
TEST(EndToEnd, ReportChartsWithoutTheSidecarSayWhichChartsLeaveItsRunsOut) {
    TempDir dir;
    ASSERT_EQ(run_harness("run " + shipped_config("tiny.yaml") + " --iterations 2 --output " +
                          (dir / "t.csv"))
                  .exit_code,
              0);
    fs::remove(dir.path() / "t.json");
    auto r = run_harness("report " + (dir / "t.csv") + " --charts " + (dir / "charts"),
                         "PATH=" + (dir / "empty"));
    EXPECT_NE(r.output.find("harness report --charts: " + (dir / "t.csv") +
                            " has no JSON sidecar (" + (dir / "t.json") +
                            "): its runs are left out of the every-step and attribution charts"),
              std::string::npos)
        << r.output;
    EXPECT_TRUE(fs::exists(dir.path() / "charts/tiny-step-time.gp"));
    EXPECT_FALSE(fs::exists(dir.path() / "charts/tiny-samples.gp"));
}

}  // namespace
