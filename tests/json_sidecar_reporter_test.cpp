#include "results/json_sidecar_reporter.hpp"
#include "results/run_json.hpp"
#include "results_samples.hpp"

#include <gtest/gtest.h>

namespace {

using namespace harness::testing;

class JsonSidecarReporter : public ResultsFiles {};

TEST_F(JsonSidecarReporter, HoldsTheProvenanceAndEveryRunWhole) {
    report(hr::JsonSidecarReporter(path("r.json")), provenance(), {full_run(), skipped_run()});
    const auto doc = nlohmann::json::parse(slurp(path("r.json")));
    EXPECT_EQ(doc.at("schema_version"), hr::kSchemaVersion);
    EXPECT_EQ(doc.at("provenance").at("config_path"), "configs/hourglass8.yaml");
    EXPECT_EQ(doc.at("provenance").at("seed"), 42);
    ASSERT_EQ(doc.at("runs").size(), 2u);
    expect_same(hr::backend_run_from_json(doc.at("runs").at(0)), full_run());
    EXPECT_EQ(doc.at("runs").at(1).at("message"), "no CUDA device");
    EXPECT_EQ(entries(), std::vector<std::string>{"r.json"});
}

}  // namespace
