// The charts of `harness report --charts`: which rows and runs they show, their data files and
// the gnuplot scripts that draw them. Drawing them is tested end to end.
#include "report/charts.hpp"
#include "output/json_sidecar_reporter.hpp"
#include "results_samples.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

namespace fs = std::filesystem;

namespace {

harness::output::CsvRow row(const std::string& config, const std::string& backend,
                            const std::string& status, double median) {
    return {{"config_name", config}, {"backend", backend}, {"device", "cpu"},
            {"math_mode", "fp32"},   {"status", status},   {"median_ms", std::to_string(median)},
            {"p10_ms", "1"},         {"p90_ms", "3"},      {"min_ms", "0.5"},
            {"max_ms", "4"}};
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

TEST(StepTimeCharts, OneChartPerConfigWithItsOkRows) {
    const std::vector<harness::output::CsvRow> rows = {
        row("tiny", "reference", "ok", 2), row("tiny", "onednn", "failed", 0),
        row("tiny", "reference", "ok", 2.5), row("hg8", "cudnn", "ok", 20)};
    const auto charts = harness::report::step_time_charts(rows);
    ASSERT_EQ(charts.size(), 2u);
    const harness::report::Chart& hg8 = charts[0];  // in config order
    EXPECT_EQ(hg8.name, "hg8-step-time");
    const harness::report::Chart& tiny = charts[1];
    EXPECT_EQ(tiny.name, "tiny-step-time");
    EXPECT_TRUE(contains(tiny.title, "tiny"));
    // The same backend twice (two rounds) is told apart; the failed row is left out.
    EXPECT_TRUE(contains(tiny.data, "\"reference (cpu, fp32) #1\"\t2\t1\t3\t0.5\t4\n"));
    EXPECT_TRUE(contains(tiny.data, "\"reference (cpu, fp32) #2\"\t2.5\t"));
    EXPECT_FALSE(contains(tiny.data, "onednn"));
    // The script reads the data file and writes the SVG beside it.
    EXPECT_TRUE(contains(tiny.script, "set output \"tiny-step-time.svg\""));
    EXPECT_TRUE(contains(tiny.script, "plot \"tiny-step-time.dat\""));
    EXPECT_TRUE(contains(tiny.script, "set yrange [-0.6:1.6]"));
    EXPECT_FALSE(contains(tiny.script, "logscale"));
}

TEST(StepTimeCharts, LogarithmicWhenTheRowsDifferByMoreThanTwentyTimes) {
    const auto charts = harness::report::step_time_charts(
        {row("hg8", "onednn", "ok", 9400), row("hg8", "cudnn", "ok", 25)});
    ASSERT_EQ(charts.size(), 1u);
    EXPECT_TRUE(contains(charts[0].script, "set logscale x"));
    EXPECT_TRUE(contains(charts[0].script, "(logarithmic)"));
}

TEST(StepTimeCharts, NamesAndLabelsAreSafe) {
    harness::output::CsvRow r = row("my config/\"x\"", "a\"b", "ok", 1);
    const auto charts = harness::report::step_time_charts({r});
    ASSERT_EQ(charts.size(), 1u);
    EXPECT_EQ(charts[0].name, "my_config__x_-step-time");
    EXPECT_TRUE(contains(charts[0].data, "\"a\\\"b (cpu, fp32)\""));
    EXPECT_TRUE(harness::report::step_time_charts({}).empty());
}

TEST(PhaseCharts, SharesOfThePhasesOfRowsThatReportThem) {
    harness::output::CsvRow timed = row("tiny", "reference", "ok", 10);
    timed["forward_ms"] = "2";
    timed["backward_ms"] = "7";
    timed["optimizer_ms"] = "1";
    const harness::output::CsvRow untimed = row("tiny", "other", "ok", 10);  // no phases reported
    const auto charts = harness::report::phase_charts({timed, untimed});
    ASSERT_EQ(charts.size(), 1u);
    EXPECT_EQ(charts[0].name, "tiny-phases");
    EXPECT_TRUE(
        contains(charts[0].data, "0\t\"reference (cpu, fp32): 10 ms\"\t20\t70\t10\t2\t7\t1\n"))
        << charts[0].data;
    EXPECT_FALSE(contains(charts[0].data, "other"));
    EXPECT_TRUE(contains(charts[0].script, "title \"optimizer\""));
    EXPECT_TRUE(harness::report::phase_charts({untimed}).empty());
}

// Every kind its own colour, the legend under the plot, and each bar's timed median as a dot.
TEST(AttributionCharts, EveryKindItsOwnColourAndEachBarItsTimedMedian) {
    harness::report::ProfiledRun fast, slow;
    fast.config = slow.config = "tiny";
    fast.backend = "onednn";
    slow.backend = "tensorflow";
    fast.timed_median_ms = 9;
    fast.profile.steps = slow.profile.steps = 3;
    double ms = 1;
    for (const std::string& kind : harness::output::kOperationKinds) {
        fast.profile.kinds_ms[kind] = ms;
        slow.profile.kinds_ms[kind] = 2 * ms;
        ms += 0.5;
    }
    fast.profile.step_ms = fast.profile.operations_ms() + 1;
    slow.profile.step_ms = slow.profile.operations_ms() + 4;
    const auto charts = harness::report::attribution_charts({fast, slow});
    ASSERT_EQ(charts.size(), 1u);
    const harness::report::Chart& c = charts[0];
    EXPECT_EQ(c.name, "tiny-attribution");
    std::set<std::string> colours;
    size_t segments = 0;
    for (size_t at = c.script.find("lc rgb \"#"); at != std::string::npos;
         at = c.script.find("lc rgb \"#", at + 1)) {
        colours.insert(c.script.substr(at + 8, 7));
        ++segments;
    }
    EXPECT_EQ(segments, harness::output::kOperationKinds.size() + 1) << c.script;  // + unaccounted
    EXPECT_EQ(colours.size(), segments) << c.script;
    EXPECT_TRUE(contains(c.script, "set key below")) << c.script;
    EXPECT_TRUE(contains(c.script, "ms per traced step")) << c.script;
    const size_t median_column = harness::output::kOperationKinds.size() + 3;
    EXPECT_TRUE(contains(c.script, "using 0:" + std::to_string(median_column) + " with points"))
        << c.script;
    EXPECT_TRUE(contains(c.data, "\"onednn\"")) << c.data;
    EXPECT_TRUE(contains(c.data, "\t9\n")) << c.data;    // onednn's timed median
    EXPECT_TRUE(contains(c.data, "\tNaN\n")) << c.data;  // tensorflow has none: no dot
}

TEST(SampleCharts, OneDataBlockPerRun) {
    const std::vector<harness::report::StepSamples> samples = {
        {"tiny", "reference (cpu, fp32)", {1.5, 2.5}, "reference"},
        {"tiny", "onednn (cpu, fp32)", {3}, "onednn"},
        {"hg8", "cudnn (cuda:0, bf16)", {20, 21}, "cudnn"}};
    const auto charts = harness::report::sample_charts(samples);
    ASSERT_EQ(charts.size(), 2u);
    const harness::report::Chart& tiny = charts[1];
    EXPECT_EQ(tiny.name, "tiny-samples");
    EXPECT_TRUE(contains(tiny.data, "# reference (cpu, fp32)\n# step\tms\n1\t1.5\n2\t2.5\n\n\n"));
    EXPECT_TRUE(contains(tiny.data, "# onednn (cpu, fp32)\n# step\tms\n1\t3\n"));
    EXPECT_TRUE(contains(tiny.script, "index 0 using 1:2"));
    EXPECT_TRUE(contains(tiny.script, "index 1 using 1:2"));
    EXPECT_TRUE(contains(tiny.script, "title \"onednn (cpu, fp32)\""));
    EXPECT_FALSE(contains(tiny.script, "index 2"));
}

class StepSamplesFile : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("charts_test." + std::to_string(::getpid()));
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string path(const std::string& name) const { return (dir_ / name).string(); }
    fs::path dir_;
};

TEST_F(StepSamplesFile, ReadsTheRunsOfTheSidecar) {
    harness::output::Provenance p;
    p.config_name = "tiny";
    harness::output::BackendRun ok, skipped;
    ok.backend = "reference";
    ok.device = "cpu";
    ok.math = hb::Math::fp32;
    ok.samples_ms = {1, 2, 3};
    skipped.backend = "cudnn";
    skipped.status = harness::output::Status::skipped;
    harness::testing::report(harness::output::JsonSidecarReporter(path("a.json")), p,
                             {ok, skipped});
    std::ofstream(path("a.csv")) << "backend\nreference\n";
    const auto samples = harness::report::step_samples(
        harness::output::read_run_results(path("a.csv")).sidecar_runs());
    ASSERT_EQ(samples.size(), 1u);
    EXPECT_EQ(samples[0].config, "tiny");
    EXPECT_EQ(samples[0].label, "reference (cpu, fp32)");
    EXPECT_EQ(samples[0].backend, "reference");
    EXPECT_EQ(samples[0].ms, (std::vector<double>{1, 2, 3}));
}

TEST_F(StepSamplesFile, NoSidecarMeansNoSamplesAndABrokenOneIsAnError) {
    std::ofstream(path("none.csv")) << "backend\nreference\n";
    const auto none = harness::output::read_run_results(path("none.csv"));
    EXPECT_FALSE(none.sidecar_text);
    EXPECT_TRUE(harness::report::step_samples(none.sidecar_runs()).empty());
    std::ofstream(path("broken.csv")) << "backend\nreference\n";
    std::ofstream(path("broken.json")) << "{\"runs\": 3}";
    try {
        harness::output::read_run_results(path("broken.csv")).sidecar_runs();
        FAIL() << "expected an error";
    } catch (const std::runtime_error& e) {
        EXPECT_TRUE(contains(e.what(), "broken.json")) << e.what();
    }
}

}  // namespace
