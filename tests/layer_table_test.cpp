#include "layers/layer_table.hpp"
#include "layers/gbench_json.hpp"

#include <gtest/gtest.h>

#include <cmath>

using harness::layers::BackendLayers;
using harness::layers::make_layer_table;
using harness::layers::merge_gbench;
using harness::layers::parse_gbench;
using harness::layers::UnitSamples;

namespace {

UnitSamples unit(const std::string& name, int count, std::vector<double> ms) {
    UnitSamples u;
    u.name = name;
    u.kind = name.substr(0, name.find('/'));
    u.count = count;
    u.training_flops = 3'000'000;
    u.timed_by = "events";
    u.ms = std::move(ms);
    return u;
}

BackendLayers backend(const std::string& name, std::vector<double> step_ms,
                      std::vector<UnitSamples> units) {
    BackendLayers b;
    b.whole.backend = name;
    b.whole.samples_ms = std::move(step_ms);
    b.units = std::move(units);
    return b;
}

TEST(LayerTable, SumsCountTimesMedianAndComparesWithTheFirstBackend) {
    const auto t = make_layer_table(
        "c",
        {backend("a", {10, 11, 12}, {unit("conv/x", 3, {1, 2, 3}), unit("add2/y", 2, {0, 0, 0})}),
         backend("b", {20, 22, 24}, {unit("conv/x", 3, {2, 4, 6}), unit("add2/y", 2, {1, 1, 1})})},
        2);
    ASSERT_EQ(t.rows.size(), 2u);
    EXPECT_EQ(t.rows[0].cells[0].median_ms, 2);
    EXPECT_DOUBLE_EQ(t.rows[0].cells[0].gflops, 3'000'000 / 2.0 / 1e6);
    EXPECT_TRUE(std::isnan(t.rows[1].cells[0].gflops)) << "a fused layer takes no time";
    EXPECT_EQ(t.rows[0].cells[0].vs_first.rounds, 0);
    EXPECT_NEAR(t.rows[0].cells[1].vs_first.ratio, 2, 1e-12);
    EXPECT_EQ(t.sums[0].whole_ms, 11);
    EXPECT_EQ(t.sums[0].parts_ms, 6);
    EXPECT_EQ(t.sums[0].outside_ms(), 5);
    EXPECT_EQ(t.sums[1].parts_ms, 3 * 4 + 2 * 1);
    EXPECT_NEAR(t.sums[1].whole_vs_first.ratio, 2, 1e-12);
    const std::string text = harness::layers::format_layer_table(t);
    EXPECT_NE(text.find("outside the layers"), std::string::npos);
    EXPECT_NE(text.find("5 (45% of the step)"), std::string::npos) << text;
}

TEST(LayerTable, NoSumWhenAConfigurationOfTheModelWasNotTimed) {
    const auto t = make_layer_table("c", {backend("a", {10}, {unit("conv/x", 3, {1, 2, 3})})}, 5);
    EXPECT_TRUE(std::isnan(t.sums[0].parts_ms));
    EXPECT_NE(harness::layers::format_layer_table(t).find("1 of the model's 5 were timed"),
              std::string::npos);
}

TEST(LayerTable, ABackendWithoutSamplesSaysWhy) {
    BackendLayers failed = backend("b", {}, {});
    failed.whole.message = "plugin 'b' not found";
    const auto t = make_layer_table("c", {backend("a", {10}, {unit("conv/x", 1, {1})}), failed}, 1);
    EXPECT_EQ(t.rows[0].cells[1].samples, 0u);
    EXPECT_EQ(t.rows[0].cells[1].error, "plugin 'b' not found");
    EXPECT_NE(harness::layers::format_layer_table(t).find("no samples: plugin 'b' not found"),
              std::string::npos);
}

// Each configuration's time against its roofline bound at the backend's threads
// (docs/roofline.md): in the table, "of bound" per cell and for the whole step, and in the CSV.
TEST(LayerTable, EachConfigurationAndTheStepAgainstTheirBound) {
    BackendLayers a = backend("a", {10, 10, 10}, {unit("conv/x", 3, {1, 2, 3})});
    a.bound_ms = {{"conv/x", 1.0}};
    a.whole.bound_ms = 5;
    const auto t = make_layer_table("c", {a}, 1);
    EXPECT_EQ(t.rows[0].cells[0].bound_ms, 1.0);
    EXPECT_EQ(t.sums[0].bound_ms, 5);
    const std::string text = harness::layers::format_layer_table(t);
    EXPECT_NE(text.find("50%"), std::string::npos) << text;  // 1 ms of bound in a 2 ms median
    EXPECT_NE(text.find("10 (50% of bound)"), std::string::npos) << text;
    const std::string csv = harness::layers::layer_csv({}, {a}, t);
    EXPECT_NE(csv.find(",1.0000,0.5000\n"), std::string::npos) << csv;
    EXPECT_NE(csv.find(",5.0000,0.5000\n"), std::string::npos) << csv;
    EXPECT_EQ(harness::layers::layer_csv_columns().back(), "bound_share");
}

TEST(GbenchJson, NotANumberIsNoSpreadAndInfinityIsNull) {
    const auto j = parse_gbench(
        R"({"benchmarks": [{"name": "nan/inf", "real_time": NaN, "cv": -nan, "r": inf}]})");
    const auto& b = j["benchmarks"][0];
    EXPECT_EQ(b["name"], "nan/inf");
    EXPECT_EQ(b["real_time"], 0);
    EXPECT_EQ(b["cv"], 0);
    EXPECT_TRUE(b["r"].is_null());
    EXPECT_THROW(parse_gbench("{\"s\": -Infinity}"), nlohmann::json::parse_error)
        << "only what Google Benchmark writes is mended";
}

TEST(GbenchJson, MergedBenchmarksAreNamedByBackendAndFamiliesKeptApart) {
    const nlohmann::json doc = {
        {"context", {{"num_cpus", 2}, {"backend", "x"}, {"library oneDNN", "3.2"}}},
        {"benchmarks",
         {{{"name", "step/manual_time"}, {"run_name", "step/manual_time"}, {"family_index", 0}},
          {{"name", "conv/manual_time"}, {"run_name", "conv/manual_time"}, {"family_index", 1}}}}};
    const auto merged = merge_gbench({{"a", doc}, {"b", doc}});
    EXPECT_EQ(merged["context"]["num_cpus"], 2);
    EXPECT_EQ(merged["context"]["backends"], "a,b");
    EXPECT_EQ(merged["context"]["b library oneDNN"], "3.2");
    EXPECT_FALSE(merged["context"].contains("backend"));
    ASSERT_EQ(merged["benchmarks"].size(), 4u);
    EXPECT_EQ(merged["benchmarks"][2]["name"], "b/step/manual_time");
    EXPECT_EQ(merged["benchmarks"][2]["run_name"], "b/step/manual_time");
    EXPECT_EQ(merged["benchmarks"][3]["family_index"], 3);
}

}  // namespace
