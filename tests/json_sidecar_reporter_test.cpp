#include "output/json_sidecar_reporter.hpp"
#include "output/run_json.hpp"
#include "results_samples.hpp"

#include <gtest/gtest.h>

namespace {

using namespace harness::testing;

class JsonSidecarReporter : public ResultsFiles {};

TEST_F(JsonSidecarReporter, HoldsTheProvenanceAndEveryRunWhole) {
    report(harness::output::JsonSidecarReporter(path("r.json")), provenance(),
           {full_run(), skipped_run()});
    const auto doc = nlohmann::json::parse(slurp(path("r.json")));
    EXPECT_EQ(doc.at("schema_version"), harness::output::kSchemaVersion);
    EXPECT_EQ(doc.at("provenance").at("config_path"), "configs/hourglass8.yaml");
    EXPECT_EQ(doc.at("provenance").at("seed"), 42);
    const auto& environment = doc.at("provenance").at("environment");
    ASSERT_EQ(environment.size(), 3u);
    EXPECT_EQ(environment.at(0).at("check"), "cpu_scaling");
    EXPECT_EQ(environment.at(0).at("state"), "powersave");
    EXPECT_EQ(environment.at(0).at("warning"), true);
    EXPECT_EQ(environment.at(1).at("warning"), false);
    EXPECT_EQ(environment.at(1).at("message"), "load average 0.10 on 96 CPUs");
    EXPECT_EQ(doc.at("provenance").at("environment_warnings"),
              "cpu_scaling=powersave;gpu_clocks=sw_thermal_slowdown");
    // The roofline's ceilings, as measured once the rounds ended (docs/roofline.md).
    const auto ceilings = harness::output::provenance_from_json(doc.at("provenance")).ceilings;
    ASSERT_EQ(ceilings.size(), 1u);
    EXPECT_EQ(ceilings[0].threads, 16);
    EXPECT_EQ(ceilings[0].flops.best, 2.5e12);
    EXPECT_EQ(ceilings[0].bytes.median, 1.9e11);
    EXPECT_EQ(ceilings[0].bytes.repetitions, 10);
    EXPECT_EQ(ceilings[0].flops.how, "AVX-512");
    const auto cost = harness::output::provenance_from_json(doc.at("provenance")).step_cost;
    ASSERT_EQ(cost.size(), 2u);
    EXPECT_EQ(cost[0].kind, "conv2d");
    EXPECT_EQ(cost[0].layers, 378);
    EXPECT_EQ(cost[0].flops, 987022000000);
    EXPECT_EQ(cost[1].bytes, 509000000);
    EXPECT_EQ(cost[0].operation_kinds, provenance().step_cost[0].operation_kinds);
    ASSERT_EQ(doc.at("runs").size(), 2u);
    expect_same(harness::output::backend_run_from_json(doc.at("runs").at(0)), full_run());
    EXPECT_EQ(doc.at("runs").at(1).at("message"), "no CUDA device");
    EXPECT_EQ(entries(), std::vector<std::string>{"r.json"});
}

}  // namespace
