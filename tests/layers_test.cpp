// `harness layers` from the outside: the table, its CSV, Google Benchmark's JSON (in the form its
// compare.py reads) and the sum of the parts.
#include "harness_process.hpp"
#include "layers/layer_table.hpp"
#include "output/csv_reader.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using harness::testing::read_json;
using harness::testing::run_harness;
using harness::testing::TempDir;

namespace {

const std::string kCheckConfig = std::string(HB_SOURCE_DIR) + "/configs/check.yaml";
const std::string kCompare = "/usr/share/benchmark/compare.py";

bool plugin_built(const std::string& plugin) {
    return std::filesystem::exists(std::string(HB_PLUGIN_DIR) + "/hb_" + plugin + ".so");
}

// Every row, checking the header.
std::vector<harness::output::CsvRow> read_rows(const std::string& path) {
    std::ifstream in(path);
    std::string header;
    std::getline(in, header);
    std::string expected;
    for (const auto& c : harness::layers::layer_csv_columns())
        expected += (expected.empty() ? "" : ",") + c;
    EXPECT_EQ(header, expected);
    return harness::output::read_csv(path);
}

// One run of every configuration of check.yaml in the reference, shared by the tests below.
class LayersCommand : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new TempDir;
        result_ = new harness::testing::CommandResult(
            run_harness("layers " + kCheckConfig +
                        " --backends reference --repetitions 2 --iterations 2 --warmup 1 "
                        "--output " +
                        (*dir_ / "layers.csv") + " --json " + (*dir_ / "layers.json")));
    }
    static void TearDownTestSuite() {
        delete result_;
        delete dir_;
    }
    static TempDir* dir_;
    static harness::testing::CommandResult* result_;
};
TempDir* LayersCommand::dir_ = nullptr;
harness::testing::CommandResult* LayersCommand::result_ = nullptr;

TEST_F(LayersCommand, TimesEveryConfigurationAndSumsThePartsAgainstTheWholeStep) {
    ASSERT_EQ(result_->exit_code, 0) << result_->output;
    EXPECT_NE(result_->output.find("sum of the parts"), std::string::npos);
    const auto rows = read_rows(*dir_ / "layers.csv");
    std::set<std::string> configurations;
    double parts = 0, step = -1, listed_parts = -1, outside = -1;
    for (const auto& r : rows) {
        EXPECT_EQ(r.at("backend"), "reference");
        EXPECT_EQ(r.at("config_name"), "check");
        EXPECT_FALSE(r.at("harness_version").empty());
        if (r.at("row") == "layer") {
            EXPECT_TRUE(configurations.insert(r.at("configuration")).second);
            EXPECT_EQ(r.at("samples"), "4");  // 2 repetitions of 2 steps
            EXPECT_EQ(r.at("timed_by"), "events");
            parts += std::stoi(r.at("count")) * std::stod(r.at("median_ms"));
            EXPECT_GT(std::stod(r.at("forward_ms")), 0) << r.at("configuration");
            EXPECT_GT(std::stod(r.at("backward_ms")), 0) << r.at("configuration");
        }
        if (r.at("row") == "step") step = std::stod(r.at("median_ms"));
        if (r.at("row") == "parts") listed_parts = std::stod(r.at("median_ms"));
        if (r.at("row") == "outside") outside = std::stod(r.at("median_ms"));
    }
    EXPECT_GT(configurations.size(), 20u);
    EXPECT_TRUE(configurations.count("conv7x7/s2/c3-64/64x64"));
    EXPECT_TRUE(configurations.count("batchnorm+relu/c64/32x32"));
    EXPECT_GT(step, 0);
    EXPECT_NEAR(listed_parts, parts, 1e-3 * parts + 1e-3);
    EXPECT_NEAR(outside, step - listed_parts, 1e-3);
}

TEST_F(LayersCommand, WritesGoogleBenchmarkJsonInTheSchemaCompareReads) {
    ASSERT_EQ(result_->exit_code, 0) << result_->output;
    const nlohmann::json j = read_json(*dir_ / "layers.json");
    ASSERT_TRUE(j.at("context").is_object());
    EXPECT_EQ(j["context"].at("backends"), "reference");
    EXPECT_TRUE(j["context"].contains("reference plugin"));
    EXPECT_TRUE(j["context"].contains("num_cpus"));  // Google Benchmark's own
    std::set<std::string> aggregates;
    bool step = false;
    for (const auto& b : j.at("benchmarks")) {
        const std::string name = b.at("name");
        EXPECT_EQ(name.rfind("reference/", 0), 0u) << name;
        EXPECT_EQ(b.at("run_name").get<std::string>().rfind("reference/", 0), 0u);
        EXPECT_EQ(b.at("time_unit"), "ms");
        EXPECT_TRUE(b.at("real_time").is_number()) << name;
        EXPECT_TRUE(b.at("cpu_time").is_number()) << name;
        EXPECT_TRUE(b.at("family_index").is_number_integer());
        EXPECT_TRUE(b.at("per_family_instance_index").is_number_integer());
        EXPECT_EQ(b.at("repetitions"), 2);
        const std::string type = b.at("run_type");
        if (type == "aggregate")
            aggregates.insert(b.at("aggregate_name").get<std::string>());
        else
            EXPECT_EQ(type, "iteration");
        if (type == "iteration" && name.find("/conv") != std::string::npos) {
            EXPECT_EQ(b.at("iterations"), 2);
            EXPECT_TRUE(b.at("GFLOP/s").is_number());
            EXPECT_TRUE(b.at("forward_ms").is_number());
            EXPECT_TRUE(b.at("count").is_number());
        }
        step = step || name.rfind("reference/step/", 0) == 0;
    }
    EXPECT_TRUE(step);
    EXPECT_EQ(aggregates, (std::set<std::string>{"mean", "median", "stddev", "cv"}));
}

TEST_F(LayersCommand, CompareReadsTheJson) {
    ASSERT_EQ(result_->exit_code, 0) << result_->output;
    if (!std::filesystem::exists(kCompare))
        GTEST_SKIP() << kCompare << " is not installed (libbenchmark-tools)";
    if (std::system("/usr/bin/python3 -c 'import scipy' 2>/dev/null") != 0)
        GTEST_SKIP() << "compare.py needs scipy (python3-scipy)";
    const std::string json = *dir_ / "layers.json";
    const std::string command =
        "/usr/bin/python3 " + kCompare + " benchmarks " + json + " " + json + " >/dev/null 2>&1";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
}

TEST(LayersFilter, TimesOnlyWhatItMatchesAndLeavesTheSumOut) {
    TempDir dir;
    const auto r = run_harness("layers " + kCheckConfig +
                               " --backends reference --filter '^conv1x1/s1/c64' --repetitions 1 "
                               "--iterations 1 --output " +
                               (dir / "l.csv"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("the sum of the parts needs every configuration"), std::string::npos);
    for (const auto& row : read_rows(dir / "l.csv")) {
        if (row.at("row") == "layer") {
            EXPECT_EQ(row.at("configuration").rfind("conv1x1/s1/c64", 0), 0u);
        }
        if (row.at("row") == "parts") {
            EXPECT_EQ(row.at("median_ms"), "");
        }
        if (row.at("row") == "step") {
            EXPECT_NE(row.at("median_ms"), "");
        }
    }
}

TEST(LayersFilter, ABadOrEmptyFilterIsAUsageErrorAndWritesNothing) {
    TempDir dir;
    auto r = run_harness("layers " + kCheckConfig + " --filter '(' --output " + (dir / "l.csv"));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.output.find("--filter: '(' is not a regular expression"), std::string::npos)
        << r.output;
    r = run_harness("layers " + kCheckConfig + " --filter zzz --output " + (dir / "l.csv"));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.output.find("matches none of check's layer configurations"), std::string::npos);
    EXPECT_NE(r.output.find("conv7x7/s2/c3-64/64x64"), std::string::npos) << "lists them";
    EXPECT_TRUE(std::filesystem::is_empty(dir.path()));

    // An expression that a backtracking engine takes exponential time over: answered at once.
    const auto start = std::chrono::steady_clock::now();
    r = run_harness("layers " + kCheckConfig + " --filter '(.*.*)*X$' --output " + (dir / "l.csv"));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("matches none of check's layer configurations"), std::string::npos);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
              30.0);
}

TEST(LayersBackends, TheSecondIsComparedWithTheFirstNamed) {
    if (!plugin_built("onednn")) GTEST_SKIP() << "plugin onednn not built";
    TempDir dir;
    const auto r = run_harness("layers " + kCheckConfig +
                               " --backends onednn,reference --filter '^conv3x3/s1/c16' "
                               "--repetitions 2 --iterations 2 --output " +
                               (dir / "l.csv"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto rows = read_rows(dir / "l.csv");
    ASSERT_FALSE(rows.empty());
    EXPECT_EQ(rows.front().at("backend"), "onednn");
    for (const auto& row : rows) {
        if (row.at("row") != "layer" && row.at("row") != "step") continue;
        if (row.at("backend") == "onednn") {
            EXPECT_EQ(row.at("ratio"), "");
        }
        if (row.at("backend") == "reference") {
            EXPECT_GT(std::stod(row.at("ratio")), 0);
            EXPECT_LE(std::stod(row.at("ratio_lo")), std::stod(row.at("ratio")));
            EXPECT_GE(std::stod(row.at("ratio_hi")), std::stod(row.at("ratio")));
        }
    }
}

}  // namespace

namespace {

TEST(LayersCheck, ChecksEachConfigurationAsHarnessCheckLayersDoes) {
    const auto r = run_harness("layers " + kCheckConfig +
                               " --check --backends reference-1thread --filter '^add3'");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("layer by layer (--layers '^add3')"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("PASS"), std::string::npos);
}

TEST(LayersCheck, TimingOptionsDoNotGoWithIt) {
    const auto r = run_harness("layers " + kCheckConfig + " --check --repetitions 3");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.output.find("--repetitions excludes --check"), std::string::npos) << r.output;
    EXPECT_EQ(run_harness("layers " + kCheckConfig + " --steps 3").exit_code, 2)
        << "--steps needs --check";
}

}  // namespace

namespace {

// A broken plugin is reported in its own column and rows, never fatal to the others.
TEST(LayersBackends, ABrokenPluginIsReportedAndTheOthersAreTimed) {
    TempDir dir;
    const auto r = run_harness(
        "layers " + std::string(HB_TEST_DATA_DIR) +
            "/fakes.yaml --backends good,crashes,throws --filter '^conv' --repetitions 1 "
            "--iterations 2 --output " +
            (dir / "l.csv"),
        harness::testing::fake_plugins_env());
    EXPECT_EQ(r.exit_code, 1) << r.output;
    std::map<std::string, std::string> status;
    for (const auto& row : read_rows(dir / "l.csv"))
        if (row.at("row") == "step") status[row.at("backend")] = row.at("status");
    EXPECT_EQ(status, (std::map<std::string, std::string>{
                          {"good", "ok"}, {"crashes", "crashed"}, {"throws", "failed"}}));
    EXPECT_NE(r.output.find("no samples: fake: step: deliberate failure"), std::string::npos)
        << r.output;
}

}  // namespace
