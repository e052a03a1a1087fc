// The roofline chart of `harness report --charts` (docs/roofline.md): each profiled backend's layer
// kinds as points under the ceilings the run measured. Drawing it is tested end to end.
#include "report/roofline.hpp"

#include <gtest/gtest.h>

namespace {

using harness::output::Ceilings;
using harness::output::KindCost;
using harness::report::ProfiledRun;
using harness::report::RooflineMachine;

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// 100 GFLOP/s and 10 GB/s on 2 threads; convolutions of 40 GFLOP over 2 GB and sums of 0.1 GFLOP
// over 1 GB.
RooflineMachine machine() {
    Ceilings c;
    c.threads = 2;
    c.flops = {100e9, 90e9, 80e9, 7, "AVX2+FMA"};
    c.bytes = {10e9, 9e9, 8e9, 10, "triad"};
    return {"hg",
            {c},
            {KindCost{"conv2d",
                      4,
                      40'000'000'000,
                      2'000'000'000,
                      {"convolution forward", "convolution backward-data"}},
             KindCost{"add", 2, 100'000'000, 1'000'000'000, {"sums"}},
             KindCost{"relu", 2, 50'000'000, 500'000'000, {"ReLU"}}}};
}

ProfiledRun profiled(const std::string& backend, int threads) {
    ProfiledRun r;
    r.config = "hg";
    r.backend = backend;
    r.threads = threads;
    r.timed_median_ms = 1000;
    r.profile.steps = 2;
    r.profile.kinds_ms = {
        {"convolution forward", 200}, {"convolution backward-data", 300}, {"sums", 250}};
    r.profile.step_ms = 900;
    return r;
}

TEST(RooflineCharts, EachKindItsIntensityAndRateUnderTheCeilings) {
    const auto charts =
        harness::report::roofline_charts({profiled("onednn", 2), profiled("slow", 1)}, {machine()});
    ASSERT_EQ(charts.size(), 1u);
    const auto& c = charts[0];
    EXPECT_EQ(c.name, "hg-roofline");
    // Convolutions: 40 GFLOP over 2 GB is 20 FLOPs a byte, in 500 ms 80 GFLOP/s; sums: 0.1 a byte
    // at 0.4 GFLOP/s; no ReLU point without its time; the step: 40.15 GFLOP over 3.5 GB in 1 s.
    EXPECT_TRUE(contains(c.data, "\"conv2d\"\t20\t80\t" + std::to_string(0x1f77b4) + "\n"))
        << c.data;
    EXPECT_TRUE(contains(c.data, "\"add\"\t0.1\t0.4\t" + std::to_string(0x9467bd) + "\n"))
        << c.data;
    EXPECT_FALSE(contains(c.data, "\"relu\"")) << c.data;
    EXPECT_TRUE(contains(c.data, "\"the step (timed)\"\t11.4714\t40.15\t0\n")) << c.data;
    EXPECT_FALSE(contains(c.data, "# slow")) << c.data;  // its thread count has no ceilings
    EXPECT_TRUE(contains(c.script, "F = 100  # GFLOP/s")) << c.script;
    EXPECT_TRUE(contains(c.script, "B = 10  # GB/s")) << c.script;
    EXPECT_TRUE(contains(c.script, "ceiling(x) = B * x < F ? B * x : F")) << c.script;
    EXPECT_TRUE(contains(c.script, "set logscale xy")) << c.script;
    EXPECT_TRUE(contains(c.script, "title \"onednn\"")) << c.script;
    EXPECT_TRUE(contains(c.script, "lc rgb \"#1f77b4\" title \"conv2d\"")) << c.script;
    EXPECT_FALSE(contains(c.script, "title \"relu\"")) << c.script;
}

TEST(RooflineCharts, NoneWithoutAStepCostOrAProfileOnItsThreads) {
    EXPECT_TRUE(harness::report::roofline_charts({profiled("onednn", 1)}, {machine()}).empty());
    EXPECT_TRUE(harness::report::roofline_charts({profiled("onednn", 2)}, {}).empty());
    ProfiledRun failed = profiled("onednn", 2);
    failed.profile.error = "plugin cannot profile";
    EXPECT_TRUE(harness::report::roofline_charts({failed}, {machine()}).empty());
}

TEST(RooflineReport, EachKindsTracedTimeAgainstItsBound) {
    const std::string report =
        harness::report::roofline_report({profiled("onednn", 2), profiled("slow", 1)}, {machine()});
    EXPECT_TRUE(contains(report, "## hg: each layer kind against its roofline bound, 2 threads"))
        << report;
    EXPECT_TRUE(contains(report, "| layer kind | bound | onednn |\n")) << report;  // not `slow`
    // Convolutions: 40 GFLOP at 100 GFLOP/s, 400 ms, traced 500; sums: 1 GB at 10 GB/s, 100 ms,
    // traced 250; ReLU: 0.5 GB, 50 ms, not traced; the rest of the 900 ms step: 150.
    EXPECT_TRUE(contains(report, "| conv2d | 400.0 | 500.0 (+100.0) |")) << report;
    EXPECT_TRUE(contains(report, "| add | 100.0 | 250.0 (+150.0) |")) << report;
    EXPECT_TRUE(contains(report, "| relu | 50.0 | 0.0 (-50.0) |")) << report;
    EXPECT_TRUE(contains(report, "| outside the kinds | 0 | 150.0 (+150.0) |")) << report;
    EXPECT_TRUE(contains(report, "| **step (profiled)** | 550.0 | 900.0 (+350.0) |")) << report;
    EXPECT_TRUE(contains(report, "| step (timed, median) | 550.0 | 1000.0 (+450.0) |")) << report;
    EXPECT_EQ(harness::report::roofline_report({profiled("onednn", 2)}, {}), "");
}

TEST(RooflineMachines, EachThreadCountsBestCeilingsOverTheSidecars) {
    harness::output::SidecarRuns round1, round2, none;
    round1.config_name = round2.config_name = none.config_name = "hg";
    round1.ceilings = round2.ceilings = machine().ceilings;
    round1.step_cost = round2.step_cost = machine().step_cost;
    round2.ceilings[0].flops.best = 120e9;
    round2.ceilings[0].bytes.best = 5e9;
    const auto machines = harness::report::roofline_machines({none, round1, round2});
    ASSERT_EQ(machines.size(), 1u);
    ASSERT_EQ(machines[0].ceilings.size(), 1u);
    EXPECT_EQ(machines[0].ceilings[0].flops.best, 120e9);
    EXPECT_EQ(machines[0].ceilings[0].bytes.best, 10e9);
    EXPECT_EQ(machines[0].step_cost.size(), 3u);
}

}  // namespace
