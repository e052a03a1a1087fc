#include "output/profile.hpp"
#include "output/chrome_trace.hpp"
#include "output/run_json.hpp"
#include "report/attribution_report.hpp"
#include "trace_check.hpp"

#include <gtest/gtest.h>

namespace {

using namespace harness::output;
using namespace harness::report;

Operation op(const std::string& layer, const std::string& kind, const std::string& phase,
             double start, double end, const std::string& track = "main") {
    return {kind + " op", layer, kind, phase, track, start, end};
}

// Two steps of 10 and 12 ms: a forward and backward convolution of layer c, a ReLU of r, an
// update, and a copy on a second track.
std::vector<ProfiledStep> two_steps() {
    std::vector<ProfiledStep> steps(2);
    for (int s = 0; s < 2; ++s) {
        steps[s].start_ms = 20.0 * s;
        steps[s].duration_ms = 10 + 2 * s;
        steps[s].operations = {op("c", "convolution forward", "forward", 0.5, 2.5),
                               op("r", "ReLU", "forward", 2.5, 3.5),
                               op("c", "convolution backward-data", "backward_data", 4, 7 + s),
                               op("", "optimizer", "update", 8, 9),
                               op("", "transfers", "transfer", 0, 0.25, "stream 0")};
    }
    return steps;
}

TEST(Profile, SummarizesMeansPerStepByKindAndLayer) {
    const Profile p = summarize(two_steps());
    EXPECT_EQ(p.steps, 2);
    EXPECT_DOUBLE_EQ(p.step_ms, 11);
    EXPECT_DOUBLE_EQ(p.kinds_ms.at("convolution forward"), 2);
    EXPECT_DOUBLE_EQ(p.kinds_ms.at("convolution backward-data"), 3.5);
    EXPECT_DOUBLE_EQ(p.kinds_ms.at("optimizer"), 1);
    EXPECT_DOUBLE_EQ(p.layers_ms.at("c"), 5.5);
    EXPECT_DOUBLE_EQ(p.layers_ms.at("r"), 1);
    EXPECT_EQ(p.layers_ms.count(""), 0u);
    EXPECT_DOUBLE_EQ(p.operations_ms(), 2 + 1 + 3.5 + 1 + 0.25);
    EXPECT_DOUBLE_EQ(p.unaccounted_ms(), 11 - 7.75);
    const std::map<std::string, double> operations{
        {"forward", 2}, {"backward_data", 1}, {"update", 1}, {"transfer", 1}};
    EXPECT_EQ(p.phase_operations, operations);
}

TEST(Profile, TravelsThroughTheRunJson) {
    BackendRun run;
    run.profile = summarize(two_steps());
    const BackendRun back = backend_run_from_json(to_json(run));
    ASSERT_TRUE(back.profile);
    EXPECT_EQ(back.profile->kinds_ms, run.profile->kinds_ms);
    EXPECT_EQ(back.profile->layers_ms, run.profile->layers_ms);
    EXPECT_EQ(back.profile->phase_operations, run.profile->phase_operations);
    EXPECT_DOUBLE_EQ(back.profile->step_ms, 11);
    EXPECT_FALSE(backend_run_from_json(to_json(BackendRun{})).profile);
}

TEST(ChromeTrace, IsCompleteAndNestedPerTrack) {
    TraceMetadata m;
    m.config_name = "tiny";
    m.backend = "onednn-unfused";
    m.plugin = "onednn";
    m.device = "cpu";
    m.options = {{"threads", "2"}};
    const nlohmann::json trace = chrome_trace(m, two_steps());
    EXPECT_EQ(harness::testing::trace_problems(trace), std::vector<std::string>{});
    EXPECT_EQ(trace["metadata"]["backend"], "onednn-unfused");
    EXPECT_EQ(trace["metadata"]["options"]["threads"], "2");
    std::map<std::string, int> by_category;
    std::set<std::string> threads;
    for (const auto& e : trace["traceEvents"]) {
        if (e["ph"] == "X") ++by_category[e["cat"].get<std::string>()];
        if (e["name"] == "thread_name") threads.insert(e["args"]["name"].get<std::string>());
        if (e["name"] == "process_name") {
            EXPECT_EQ(e["args"]["name"], "onednn-unfused (onednn on cpu)");
        }
    }
    EXPECT_EQ(threads, (std::set<std::string>{"main", "stream 0"}));
    EXPECT_EQ(by_category["step"], 4);   // each step on both tracks
    EXPECT_EQ(by_category["phase"], 8);  // forward, backward_data, update; transfer
    EXPECT_EQ(by_category["convolution forward"], 2);
    // The second step starts 20 ms after the first: microseconds in the file.
    bool found = false;
    for (const auto& e : trace["traceEvents"])
        if (e["ph"] == "X" && e["name"] == "step 1" && e["tid"] == 1) {
            EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 20000);
            EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 12000);
            found = true;
        }
    EXPECT_TRUE(found);
}

TEST(ChromeTrace, TheCheckFindsSlicesThatDoNotNest) {
    nlohmann::json trace = chrome_trace({}, two_steps());
    trace["traceEvents"].push_back(
        {{"name", "stray"}, {"ph", "X"}, {"pid", 1}, {"tid", 1}, {"ts", 9000}, {"dur", 5000}});
    const auto problems = harness::testing::trace_problems(trace);
    ASSERT_FALSE(problems.empty());
    EXPECT_NE(problems[0].find("stray"), std::string::npos) << problems[0];
    trace["traceEvents"].push_back({{"name", "half"}, {"ph", "X"}, {"pid", 1}});
    EXPECT_GE(harness::testing::trace_problems(trace).size(), 2u);
}

ProfiledRun profiled(const std::string& backend, double conv, double relu, double step,
                     int steps = 5) {
    ProfiledRun r;
    r.config = "tiny";
    r.backend = backend;
    r.timed_median_ms = step - 1;
    r.profile.steps = steps;
    r.profile.step_ms = step;
    r.profile.kinds_ms = {{"convolution forward", conv}};
    if (relu > 0) r.profile.kinds_ms["ReLU"] = relu;
    r.profile.layers_ms = {{"a.conv", conv}, {"a.relu", relu}};
    return r;
}

TEST(AttributionReport, ByKindListsEachBackendWithTheUnaccountedRestAndTheDifference) {
    const std::string md = attribution_report(
        {profiled("onednn", 6, 0, 7), profiled("libtorch-cpu", 8, 1.5, 10)}, Attribution::kind);
    EXPECT_NE(md.find("| operation kind | onednn | libtorch-cpu | libtorch-cpu − onednn |"),
              std::string::npos)
        << md;
    EXPECT_NE(md.find("| convolution forward | 6.00 | 8.00 | +2.00 |"), std::string::npos) << md;
    EXPECT_NE(md.find("| ReLU | 0.00 | 1.50 | +1.50 |"), std::string::npos) << md;
    EXPECT_NE(md.find("| unaccounted (between operations) | 1.00 | 0.50 | -0.50 |"),
              std::string::npos)
        << md;
    EXPECT_NE(md.find("| **step (profiled)** | 7.00 | 10.00 | +3.00 |"), std::string::npos) << md;
    EXPECT_NE(md.find("| step (timed, median, unprofiled) | 6.00 | 9.00 | +3.00 |"),
              std::string::npos)
        << md;
    EXPECT_NE(md.find("| operations' share of the step | 85.7% | 95.0% | |"), std::string::npos)
        << md;
    EXPECT_EQ(md.find("| pooling"), std::string::npos) << md;  // no backend has any
    EXPECT_EQ(md.find("operations run"), std::string::npos) << md;  // none counted
}

// How fine-grained each step is: the operations of each part, the backward phases together,
// merged over rounds by their profiled steps.
TEST(AttributionReport, CountsTheOperationsOfEachPartOfTheStep) {
    ProfiledRun fine = profiled("tensorflow", 8, 1, 10), coarse = profiled("onednn", 6, 0, 7);
    fine.profile.phase_operations = {
        {"forward", 40}, {"backward_data", 30}, {"backward_weights", 20}, {"update", 12},
        {"transfer", 2}};
    coarse.profile.phase_operations = {{"forward", 10}, {"backward", 20}, {"update", 1}};
    ProfiledRun later = coarse;
    later.profile.phase_operations["forward"] = 14;
    const std::string md = attribution_report({coarse, fine, later}, Attribution::kind);
    EXPECT_NE(md.find("| operations run: forward | 12 | 40 | +28 |"), std::string::npos) << md;
    EXPECT_NE(md.find("| operations run: backward | 20 | 50 | +30 |"), std::string::npos) << md;
    EXPECT_NE(md.find("| operations run: update | 1 | 12 | +11 |"), std::string::npos) << md;
    EXPECT_NE(md.find("| operations run: other | 0 | 2 | +2 |"), std::string::npos) << md;
}

TEST(AttributionReport, ByLayerListsTheLayersThatDifferMostFirst) {
    const std::string md = attribution_report(
        {profiled("onednn", 6, 0, 7), profiled("libtorch-cpu", 6.5, 3, 10)}, Attribution::layer);
    const size_t relu = md.find("| `a.relu` | 0.00 | 3.00 | +3.00 |");
    const size_t conv = md.find("| `a.conv` | 6.00 | 6.50 | +0.50 |");
    ASSERT_NE(relu, std::string::npos) << md;
    ASSERT_NE(conv, std::string::npos) << md;
    EXPECT_LT(relu, conv);
}

TEST(AttributionReport, RoundsAreMergedWeightedByTheirSteps) {
    const auto merged =
        merge_rounds({profiled("onednn", 6, 0, 7, 1), profiled("onednn", 9, 0, 10, 2)});
    ASSERT_EQ(merged.size(), 1u);
    EXPECT_EQ(merged[0].profile.steps, 3);
    EXPECT_DOUBLE_EQ(merged[0].profile.kinds_ms.at("convolution forward"), 8);
    EXPECT_DOUBLE_EQ(merged[0].profile.step_ms, 9);
    EXPECT_DOUBLE_EQ(merged[0].timed_median_ms, 7.5);
}

TEST(AttributionReport, SaysWhichBackendsHaveNoProfileAndWhy) {
    ProfiledRun missing;
    missing.config = "tiny";
    missing.backend = "old";
    missing.profile.error = "plugin old cannot profile (no HB_CAP_PROFILE)";
    const std::string md =
        attribution_report({profiled("onednn", 6, 0, 7), missing}, Attribution::kind);
    EXPECT_NE(md.find("- tiny / old: plugin old cannot profile"), std::string::npos) << md;
    EXPECT_NE(attribution_report({}, Attribution::kind).find("No profiles"), std::string::npos);
}

}  // namespace
