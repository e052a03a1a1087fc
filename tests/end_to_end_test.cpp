// `harness` from the outside, as a user runs it: the shipped configs, the files it writes, its
// exit codes and its errors.
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
using harness::testing::read_json;
using harness::testing::run_harness;
using harness::testing::shipped_config;
using harness::testing::TempDir;

TEST(EndToEnd, TinyConfigRunsTheReferenceAndWritesAValidCsv) {
    TempDir dir;
    const std::string csv = dir / "out/tiny.csv";
    auto r = run_harness("run " + shipped_config("tiny.yaml") + " --output " + csv);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("reference"), std::string::npos) << r.output;

    auto rows = harness::output::read_csv(csv);
    ASSERT_EQ(rows.size(), 1u);
    auto& row = rows[0];
    // Every schema column is present, in order, and nothing else.
    std::ifstream in(csv);
    std::string header;
    std::getline(in, header);
    std::string expected;
    for (const auto& c : harness::output::csv_columns())
        expected += (expected.empty() ? "" : ",") + c;
    EXPECT_EQ(header, expected);

    EXPECT_EQ(row["schema_version"], std::to_string(harness::output::kSchemaVersion));
    EXPECT_EQ(row["backend"], "reference");
    EXPECT_EQ(row["plugin"], "reference");
    EXPECT_EQ(row["status"], "ok");
    EXPECT_EQ(row["device"], "cpu");
    EXPECT_EQ(row["config_name"], "tiny");
    EXPECT_EQ(row["config_sha256"].size(), 64u);
    EXPECT_EQ(row["batch"], "2");
    EXPECT_EQ(row["iterations"], "5");
    EXPECT_EQ(row["warmup"], "1");
    EXPECT_EQ(row["seed"], "1");
    EXPECT_EQ(row["placement"], "device");
    EXPECT_EQ(row["math_mode"], "fp32");
    EXPECT_EQ(row["threads"], "2");
    EXPECT_FALSE(row["utc_time"].empty());
    EXPECT_FALSE(row["cpu_model"].empty());
    EXPECT_FALSE(row["git_commit"].empty());
    EXPECT_GT(std::stod(row["median_ms"]), 0.0);
    EXPECT_LE(std::stod(row["min_ms"]), std::stod(row["median_ms"]));
    EXPECT_GE(std::stod(row["max_ms"]), std::stod(row["median_ms"]));
    EXPECT_GT(std::stod(row["gflops"]), 0.0);
    // The reference computes on its 2 threads: CPU time above zero, at most 2 threads' worth
    // (and a little for the clocks' granularity).
    EXPECT_GT(std::stod(row["cpu_ms"]), 0.0);
    EXPECT_LE(std::stod(row["cpu_ms"]), 2.0 * std::stod(row["max_ms"]) + 1.0);
    const double first = std::stod(row["first_loss"]), last = std::stod(row["last_loss"]);
    EXPECT_TRUE(std::isfinite(first) && first > 0);
    EXPECT_TRUE(std::isfinite(last) && last > 0);
    EXPECT_EQ(row["nonfinite_loss"], "false");

    // The sidecar keeps every sample and every step's loss.
    auto json = read_json(dir / "out/tiny.json");
    ASSERT_EQ(json["runs"].size(), 1u);
    EXPECT_EQ(json["runs"][0]["samples_ms"].size(), 5u);
    EXPECT_EQ(json["runs"][0]["losses"].size(), 5u);
    EXPECT_EQ(json["runs"][0]["warmup_losses"].size(), 1u);
    // The machine's state is checked (CPU scaling and load; no GPU entry, no GPU check); each
    // warning is in the row and printed twice: before the run and under the table.
    const auto& environment = json["provenance"]["environment"];
    ASSERT_EQ(environment.size(), 2u);
    EXPECT_EQ(environment[0]["check"], "cpu_scaling");
    EXPECT_EQ(environment[1]["check"], "load_average");
    EXPECT_EQ(json["provenance"]["environment_warnings"], row["environment_warnings"]);
    size_t warnings = 0, printed = 0;
    for (const auto& f : environment) {
        if (!f["warning"].get<bool>()) continue;
        ++warnings;
        EXPECT_NE(row["environment_warnings"].find(f["check"].get<std::string>() + "="),
                  std::string::npos);
    }
    for (size_t at = r.output.find("***WARNING*** "); at != std::string::npos;
         at = r.output.find("***WARNING*** ", at + 1))
        ++printed;
    EXPECT_EQ(printed, 2 * warnings) << r.output;
    // No temporary file is left beside the results.
    for (const auto& f : fs::directory_iterator(dir.path() / "out"))
        EXPECT_EQ(f.path().filename().string().find(".tmp"), std::string::npos) << f.path();
}

TEST(EndToEnd, SameSeedGivesTheSameLosses) {
    TempDir dir;
    ASSERT_EQ(run_harness("run " + shipped_config("tiny.yaml") + " --iterations 2 --output " +
                          (dir / "a.csv"))
                  .exit_code,
              0);
    ASSERT_EQ(run_harness("run " + shipped_config("tiny.yaml") + " --iterations 2 --output " +
                          (dir / "b.csv"))
                  .exit_code,
              0);
    auto a = read_json(dir / "a.json")["runs"][0]["losses"];
    auto b = read_json(dir / "b.json")["runs"][0]["losses"];
    EXPECT_EQ(a, b);
}

TEST(EndToEnd, SeedExperimentSkipsEveryBackendThatIsNotBuiltWithItsReason) {
    TempDir dir;
    auto r = run_harness("run " + shipped_config("hourglass8.yaml") +
                         " --backends libtorch-cuda,cudnn,cudnn-bf16-graphs --iterations 1 "
                         "--warmup 0 --output " +
                         (dir / "hg8.csv"));
    auto rows = harness::output::read_csv(dir / "hg8.csv");
    ASSERT_EQ(rows.size(), 3u) << r.output;
    // The math mode and threads are what the session's manifest says, never the config's: a
    // backend that did not run has none.
    bool ran = false;
    for (auto& row : rows) {
        if (row["status"] == "skipped") {
            EXPECT_FALSE(row["message"].empty());
            EXPECT_EQ(row["math_mode"], "") << row["backend"];
            EXPECT_EQ(row["threads"], "") << row["backend"];
        } else {
            EXPECT_EQ(row["status"], "ok") << row["backend"] << ": " << row["message"];
            ran = true;
        }
    }
    // Without a GPU nothing ran, which is not a success (exit 4).
    EXPECT_EQ(r.exit_code, ran ? 0 : 4) << r.output;
}

TEST(EndToEnd, InfoReportsParameterAndFlopCountsAsJson) {
    auto r = run_harness("info " + shipped_config("hourglass8.yaml") + " --json", "",
                         harness::testing::Stderr::discarded);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto j = nlohmann::json::parse(r.output);
    EXPECT_EQ(j["parameters"].get<int64_t>(), 25434112);
    EXPECT_EQ(j["flops_per_image_forward"].get<int64_t>(), 55228301312);
    EXPECT_EQ(j["flops_per_training_step"].get<int64_t>(), 994109423616);
    EXPECT_EQ(j["model"]["stacks"].get<int>(), 8);
    EXPECT_GT(j["activation_bytes"].get<int64_t>(), 0);
    // The step's roofline bound on this machine, by layer kind (docs/roofline.md).
    const auto& roofline = j["roofline"];
    EXPECT_GT(roofline["flops_per_s"]["best"].get<double>(), 0);
    EXPECT_GT(roofline["bytes_per_s"]["best"].get<double>(), 0);
    ASSERT_EQ(roofline["kinds"].size(), 8u);
    double sum_ms = 0;
    int64_t conv_flops = 0;
    for (const auto& k : roofline["kinds"]) {
        sum_ms += k["bound_ms"].get<double>();
        EXPECT_TRUE(k["binding"] == "compute" || k["binding"] == "memory") << k.dump();
        if (k["kind"] == "conv2d") conv_flops = k["flops"].get<int64_t>();
    }
    EXPECT_NEAR(roofline["step_bound_ms"].get<double>(), sum_ms, 1e-6 * sum_ms);
    EXPECT_GT(conv_flops, 0);
}

TEST(EndToEnd, InfoPrintsAReadableSummary) {
    auto r = run_harness("info " + shipped_config("hourglass2.yaml"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("parameters    6570400 trainable"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("GFLOP per training step"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("ms per step at batch 6"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("binding ceiling"), std::string::npos) << r.output;
}

TEST(EndToEnd, ABadConfigIsAnErrorWithPositionAndWritesNothing) {
    TempDir dir;
    const std::string bad = dir / "bad.yaml";
    std::ofstream(bad) << "model:\n  stacks: 2\n  stakcs: 3\nbackends:\n  - plugin: reference\n";
    auto r = run_harness("run " + bad + " --output " + (dir / "out.csv"));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(bad + ":3:3"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("stakcs"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir / "out.csv"));
    EXPECT_EQ(run_harness("info " + bad).exit_code, 2);
}

TEST(EndToEnd, UnknownBackendAndBadOptionsAreUsageErrors) {
    TempDir dir;
    auto r = run_harness("run " + shipped_config("tiny.yaml") + " --backends nosuch --output " +
                         (dir / "x.csv"));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.output.find("no backend 'nosuch'"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("it has: reference"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir / "x.csv"));
    EXPECT_EQ(run_harness("run " + shipped_config("tiny.yaml") + " --iterations 0").exit_code, 2);
    EXPECT_EQ(run_harness("run").exit_code, 2);
    EXPECT_EQ(run_harness("frobnicate").exit_code, 2);
    EXPECT_EQ(run_harness("run " + shipped_config("tiny.yaml") + " --iterations abc").exit_code, 2);
    EXPECT_EQ(run_harness("run /nonexistent.yaml").exit_code, 2);
}

// A plugin option is checked against what the plugin declares (ABI 2.4) before anything runs: an
// unknown key or an ill-typed value is a config error at its place, for run, check and layers.
// A row records every option the session ran with, the plugin's declared defaults included, in
// `options_in_force`; `options` keeps what the config set.
TEST(EndToEnd, ARowRecordsEveryOptionInForceAndWhichTheConfigSet) {
    TempDir dir;
    const std::string yaml = dir / "set.yaml";
    std::ofstream(yaml) << "model: {stacks: 1, features: 8, depth: 1, joints: 2, input_size: 16, "
                           "batch: 2}\nrun: {warmup: 0, iterations: 1}\n"
                           "backends:\n  - {plugin: reference, options: {threads: 1}}\n";
    ASSERT_EQ(run_harness("run " + yaml + " --output " + (dir / "o.csv")).exit_code, 0);
    const auto rows = harness::output::read_csv(dir / "o.csv");
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].at("options"), "threads=1");
    EXPECT_EQ(rows[0].at("options_in_force"),
              "gemm_kernel=auto;math=fp32;rounding_bits=24;rounding_seed=0;threads=1");
    const auto sidecar = read_json(dir / "o.json");
    EXPECT_EQ(sidecar["runs"][0]["options_in_force"]["math"], "fp32");
}

// Once the rounds end, each CPU row's step is set against the roofline bound at its thread count
// (docs/roofline.md): the ceilings measured then are in the sidecar's provenance, the bound and
// its share in the row and the table.
TEST(EndToEnd, EachCpuRowIsMeasuredAgainstTheRooflineBound) {
    TempDir dir;
    const std::string yaml = dir / "bound.yaml";
    std::ofstream(yaml) << "model: {stacks: 1, features: 8, depth: 1, joints: 2, input_size: 16, "
                           "batch: 2}\nrun: {warmup: 0, iterations: 2}\n"
                           "backends:\n  - {plugin: reference, options: {threads: 1}}\n";
    const auto r = run_harness("run " + yaml + " --profile-steps 1 --output " + (dir / "o.csv"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("of bound"), std::string::npos) << r.output;
    const auto rows = harness::output::read_csv(dir / "o.csv");
    ASSERT_EQ(rows.size(), 1u);
    const double bound = harness::output::number_of(rows[0], "bound_ms");
    const double median = harness::output::number_of(rows[0], "median_ms");
    EXPECT_GT(bound, 0);
    EXPECT_NEAR(harness::output::number_of(rows[0], "bound_share"), bound / median, 1e-3);
    const auto ceilings = read_json(dir / "o.json")["provenance"]["ceilings"];
    ASSERT_EQ(ceilings.size(), 1u);
    EXPECT_EQ(ceilings[0]["threads"], 1);
    EXPECT_GT(ceilings[0]["flops_per_s"]["best"].get<double>(), 0);
    EXPECT_GT(ceilings[0]["bytes_per_s"]["best"].get<double>(), 0);
    // With them the step's cost by layer kind, which the roofline chart sets against them.
    const auto cost = read_json(dir / "o.json")["provenance"]["step_cost"];
    ASSERT_EQ(cost.size(), 8u);  // the seven layer kinds and the update
    EXPECT_EQ(cost[0]["kind"], "conv2d");
    EXPECT_EQ(cost[7]["kind"], "rmsprop");
    EXPECT_EQ(cost[7]["operation_kinds"], nlohmann::json::array({"optimizer"}));
    // `harness report --by kind` sets each layer kind's profiled time against them.
    const auto report = run_harness("report " + (dir / "o.csv") + " --by kind");
    EXPECT_NE(report.output.find("## bound: each layer kind against its roofline bound, 1 thread"),
              std::string::npos)
        << report.output;
}

TEST(EndToEnd, AnUnknownOrIllTypedPluginOptionIsAConfigErrorAtItsPlace) {
    TempDir dir;
    const std::string head =
        "model: {stacks: 1, features: 8, depth: 1, joints: 2, input_size: 32, batch: 2}\n"
        "backends:\n  - plugin: reference\n    options:\n";
    const std::string typo = dir / "typo.yaml", ill = dir / "ill.yaml";
    std::ofstream(typo) << head << "      threads: 1\n      gemm_kernal: auto\n";
    std::ofstream(ill) << head << "      threads: many\n";
    const std::string output = " --output " + (dir / "o.csv");
    for (const std::string& command :
         {"run " + typo + output, "check " + typo, "layers " + typo + output}) {
        auto r = run_harness(command);
        EXPECT_EQ(r.exit_code, 2) << command << ": " << r.output;
        EXPECT_NE(r.output.find(typo + ":6:20: key 'backends[0].options.gemm_kernal': the "
                                       "reference plugin has no option 'gemm_kernal' (did you "
                                       "mean 'gemm_kernel'?)"),
                  std::string::npos)
            << command << ": " << r.output;
        EXPECT_FALSE(fs::exists(dir / "o.csv")) << command;
    }
    const std::string far = dir / "far.yaml";
    std::ofstream(far) << head << "      verbose: true\n";
    auto r = run_harness("run " + far + output);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("the reference plugin has no option 'verbose' (its options: threads, "
                            "gemm_kernel, math, rounding_seed, rounding_bits)"),
              std::string::npos)
        << r.output;
    // A name retired for one name per idea across plugins says what replaced it.
    const std::string retired = dir / "retired.yaml";
    std::ofstream(retired) << head << "      precision: fp64\n";
    r = run_harness("check " + retired);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(retired + ":5:18: key 'backends[0].options.precision': the reference "
                                      "plugin's option 'precision' is now 'math': write math: "
                                      "fp64 for precision: fp64, fp32 for fp32"),
              std::string::npos)
        << r.output;
    r = run_harness("run " + ill + " --output " + (dir / "o.csv"));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(ill + ":5:16: key 'backends[0].options.threads': expected an integer "
                                  "in [1, 1024], got 'many' (reference's threads: "),
              std::string::npos)
        << r.output;
    EXPECT_FALSE(fs::exists(dir / "o.csv"));
}

// A second run aimed at the results file of a run in progress is refused before it runs anything;
// a finished run leaves no lock behind.
TEST(EndToEnd, TwoRunsCannotWriteTheSameResultsFile) {
    TempDir dir;
    const std::string csv = dir / "shared.csv";
    const int held = ::open((csv + ".lock").c_str(), O_RDWR | O_CREAT, 0644);
    ASSERT_GE(held, 0);
    ASSERT_EQ(::flock(held, LOCK_EX | LOCK_NB), 0);  // as a run in progress holds it
    auto r = run_harness("run " + shipped_config("tiny.yaml") + " --output " + csv);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("another run is writing"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(csv));
    ::close(held);
    fs::remove(csv + ".lock");

    r = run_harness("run " + shipped_config("tiny.yaml") + " --output " + csv);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(fs::exists(csv));
    EXPECT_FALSE(fs::exists(csv + ".lock"));
}

// An empty --backends (an unset shell variable) selects nothing: a usage error, not every backend.
TEST(EndToEnd, AnEmptyBackendListIsAUsageError) {
    TempDir dir;
    const std::string output = " --output " + (dir / "x.csv");
    for (const std::string& command :
         {"run " + shipped_config("tiny.yaml") + output, "check " + shipped_config("tiny.yaml")}) {
        auto r = run_harness(command + " --backends ''");
        EXPECT_EQ(r.exit_code, 2) << command << ": " << r.output;
        EXPECT_NE(r.output.find("--backends: no backend named"), std::string::npos) << r.output;
    }
    EXPECT_FALSE(fs::exists(dir / "x.csv"));
}

// The command line's mistakes are named as what they are.
TEST(EndToEnd, CommandLineMistakesAreNamed) {
    auto r = run_harness("frobnicate");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.output,
              "harness: unknown command 'frobnicate' (the commands: run, check, layers, report, "
              "publish, list, info; see harness --help)\n");
    r = run_harness("\"$(printf 'frob\\nnicate')\"");  // a newline in the word
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.output.find("unknown command 'frob\\nnicate'"), std::string::npos) << r.output;
    for (const std::string option : {"--iterations", "--warmup", "--profile-steps"}) {
        r = run_harness("run " + shipped_config("tiny.yaml") + " " + option + " abc");
        EXPECT_EQ(r.exit_code, 2) << option;
        EXPECT_NE(r.output.find(option + ": 'abc' is not a whole number"), std::string::npos)
            << r.output;
        r = run_harness("run " + shipped_config("tiny.yaml") + " " + option + " -5");
        EXPECT_EQ(r.exit_code, 2) << option;
        EXPECT_NE(r.output.find(option + ": -5 is out of range"), std::string::npos) << r.output;
    }
    r = run_harness("check " + shipped_config("tiny.yaml") + " --steps 2x");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.output.find("--steps: '2x' is not a whole number"), std::string::npos) << r.output;
}

TEST(EndToEnd, EveryCommandHasHelp) {
    for (const char* cmd : {"", "run ", "check ", "list ", "info ", "report "}) {
        auto r = run_harness(std::string(cmd) + "--help");
        EXPECT_EQ(r.exit_code, 0) << cmd;
        EXPECT_NE(r.output.find("Usage"), std::string::npos) << cmd << r.output;
    }
}

TEST(EndToEnd, DumpWritesTheInitialTensorsAndBatches) {
    TempDir dir;
    auto r =
        run_harness("run " + shipped_config("tiny.yaml") + " --iterations 1 --warmup 0 --dump " +
                    (dir / "dump") + " --output " + (dir / "x.csv"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto index = read_json(dir / "dump/index.json");
    EXPECT_EQ(index["seed"].get<uint64_t>(), 1u);
    ASSERT_GT(index["tensors"].size(), 10u);
    EXPECT_EQ(index["tensors"][0]["name"], "pre.conv.weight");
    EXPECT_TRUE(fs::exists(dir / "dump/pre.conv.weight.npy"));
    EXPECT_TRUE(fs::exists(dir / "dump/input.0.npy"));
    EXPECT_TRUE(fs::exists(dir / "dump/target.1.npy"));
}

TEST(EndToEnd, JsonOutputOfRunIsParseable) {
    TempDir dir;
    auto r = run_harness(
        "run " + shipped_config("tiny.yaml") + " --iterations 1 --json --output " + (dir / "x.csv"),
        "", harness::testing::Stderr::discarded);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto j = nlohmann::json::parse(r.output);
    EXPECT_EQ(j["runs"][0]["status"], "ok");
    EXPECT_EQ(j["provenance"]["config_name"], "tiny");
    EXPECT_TRUE(j["provenance"]["environment_warnings"].is_string());
}

TEST(EndToEnd, ListShowsTheReferencePlugin) {
    auto r = run_harness("list");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("reference 1.0.0 (ABI 2.6)"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("device cpu"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("options: threads (1..1024; timing only), gemm_kernel "
                            "(auto|portable|avx2_fma; default auto)"),
              std::string::npos)
        << r.output;
}

}  // namespace
