// `harness` from the outside, as a user runs it: the shipped configs, the files it writes, its
// exit codes and its errors.
#include "harness_process.hpp"
#include "results/csv_reader.hpp"
#include "results/csv_reporter.hpp"
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
using harness::testing::TempDir;

std::string config(const std::string& name) {
    return std::string(HB_SOURCE_DIR) + "/configs/" + name;
}

nlohmann::json read_json(const std::string& path) {
    std::ifstream in(path);
    return nlohmann::json::parse(in);
}

TEST(EndToEnd, TinyConfigRunsTheReferenceAndWritesAValidCsv) {
    TempDir dir;
    const std::string csv = dir / "out/tiny.csv";
    auto r = run_harness("run " + config("tiny.yaml") + " --output " + csv);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("reference"), std::string::npos) << r.output;

    auto rows = harness::results::read_csv(csv);
    ASSERT_EQ(rows.size(), 1u);
    auto& row = rows[0];
    // Every schema column is present, in order, and nothing else.
    std::ifstream in(csv);
    std::string header;
    std::getline(in, header);
    std::string expected;
    for (const auto& c : harness::results::csv_columns())
        expected += (expected.empty() ? "" : ",") + c;
    EXPECT_EQ(header, expected);

    EXPECT_EQ(row["schema_version"], std::to_string(harness::results::kSchemaVersion));
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

// Every destination is checked before any backend runs: a bad one is a usage error (exit 2), and
// nothing is created, neither the output's folder nor the default runs/.
struct Destination {
    std::string arguments;  // after "run tiny.yaml"; {dir} is the test's folder
    std::string message;
};

std::string in_dir(std::string text, const std::string& dir) {
    for (size_t at = text.find("{dir}"); at != std::string::npos; at = text.find("{dir}"))
        text.replace(at, 5, dir);
    return text;
}

std::vector<std::string> listing(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& f : fs::recursive_directory_iterator(dir))
        names.push_back(f.path().lexically_relative(dir).string());
    std::sort(names.begin(), names.end());
    return names;
}

TEST(EndToEnd, EveryDestinationIsCheckedBeforeAnythingRunsOrIsWritten) {
    const std::vector<Destination> cases{
        {"--output {dir}/taken.csv", "--output: {dir}/taken.csv is a folder; give a file name"},
        {"--output {dir}/", "--output: {dir}/ is a folder; give a file name"},
        {"--output {dir}/sidecar.csv", "--output's JSON sidecar: {dir}/sidecar.json is a folder"},
        {"--output {dir}/file/x.csv",
         "--output: cannot create folder {dir}/file: {dir}/file is not a folder"},
        {"--output /proc/hb-test/x.csv", "--output: cannot write in /proc: "},
        {"--output /proc/x.csv", "--output: cannot write in /proc: "},
        {"--dump {dir}/file", "--dump: {dir}/file is a file, not a folder"},
        {"--dump /proc/hb-dump", "--dump: cannot write in /proc: "},
        {"--trace {dir}/file", "--trace: {dir}/file is a file, not a folder"},
        {"--output {dir}/new/x.csv --dump {dir}/file", "--dump: {dir}/file is a file"},
        {"--output {dir}/new/x.csv --trace /proc/hb-trace", "--trace: cannot write in /proc: "},
    };
    for (const auto& c : cases) {
        TempDir dir;
        fs::create_directories(dir / "taken.csv");
        fs::create_directories(dir / "sidecar.json");
        std::ofstream(dir / "file") << "a file\n";
        const auto before = listing(dir.path());
        // From inside the folder, so that the default output would be its runs/.
        auto r = run_harness(
            "run " + config("tiny.yaml") + " " + in_dir(c.arguments, dir.path().string()),
            "cd " + dir.path().string() + " &&");
        const std::string expected = in_dir(c.message, dir.path().string());
        EXPECT_EQ(r.exit_code, 2) << c.arguments << ": " << r.output;
        EXPECT_NE(r.output.find("harness run: " + expected), std::string::npos)
            << c.arguments << ": " << r.output;
        EXPECT_EQ(r.output.find("[1/1]"), std::string::npos) << r.output;  // nothing ran
        EXPECT_EQ(listing(dir.path()), before) << c.arguments;             // nothing written
    }
}

std::string file_text(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// No destination may be a file the command reads or another destination, however it is named
// (another path, `..`, a symlink): a usage error (exit 2) before anything runs, the input intact.
TEST(EndToEnd, NoDestinationIsAnInputOrAnotherDestination) {
    TempDir dir;
    const std::string yaml = dir / "c.yaml";
    fs::copy_file(config("tiny.yaml"), yaml);
    const std::string original = file_text(yaml);
    fs::create_directories(dir / "sub");
    fs::create_symlink(yaml, dir / "link.csv");
    const std::vector<Destination> cases{
        {"run {dir}/c.yaml --output {dir}/c.yaml",
         "harness run: --output: {dir}/c.yaml is the config, which this command reads"},
        {"run {dir}/c.yaml --output {dir}/sub/../c.yaml",
         "harness run: --output: {dir}/sub/../c.yaml is the config"},
        {"run {dir}/c.yaml --output {dir}/link.csv",
         "harness run: --output: {dir}/link.csv is "
         "the config"},
        {"run {dir}/c.yaml --output {dir}/r.csv --dump {dir}/sub --trace {dir}/sub/",
         "harness run: --trace: {dir}/sub/ is also --dump"},
        {"layers {dir}/c.yaml --output {dir}/x.csv --json {dir}/sub/../x.csv",
         "harness layers: --json: {dir}/sub/../x.csv is also --output"},
        {"layers {dir}/c.yaml --output {dir}/c.yaml",
         "harness layers: --output: {dir}/c.yaml is "
         "the config"},
    };
    for (const auto& c : cases) {
        const auto before = listing(dir.path());
        auto r = run_harness(in_dir(c.arguments, dir.path().string()));
        EXPECT_EQ(r.exit_code, 2) << c.arguments << ": " << r.output;
        EXPECT_NE(r.output.find(in_dir(c.message, dir.path().string())), std::string::npos)
            << c.arguments << ": " << r.output;
        EXPECT_EQ(listing(dir.path()), before) << c.arguments;
        EXPECT_EQ(file_text(yaml), original) << c.arguments;
    }

    // A CSV named .json gets a sidecar that is not itself.
    auto r = run_harness("run " + yaml + " --iterations 1 --warmup 0 --output " + (dir / "r.json"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(harness::results::read_csv(dir / "r.json").size(), 1u);
    EXPECT_TRUE(read_json(dir / "r.json.json").contains("runs"));
    EXPECT_NE(r.output.find("(raw samples: " + (dir / "r.json.json") + ")"), std::string::npos)
        << r.output;

    // A report's output is neither a CSV it reads nor that CSV's sidecar.
    for (const std::string& output : {dir / "r.json", dir / "r.json.json"}) {
        const std::string csv_before = file_text(dir / "r.json");
        r = run_harness("report " + (dir / "r.json") + " --output " + output);
        EXPECT_EQ(r.exit_code, 2) << output << ": " << r.output;
        EXPECT_NE(r.output.find("harness report: --output: " + output + " is a results CSV"),
                  std::string::npos)
            << r.output;
        EXPECT_EQ(file_text(dir / "r.json"), csv_before);
    }
}

TEST(EndToEnd, SameSeedGivesTheSameLosses) {
    TempDir dir;
    ASSERT_EQ(
        run_harness("run " + config("tiny.yaml") + " --iterations 2 --output " + (dir / "a.csv"))
            .exit_code,
        0);
    ASSERT_EQ(
        run_harness("run " + config("tiny.yaml") + " --iterations 2 --output " + (dir / "b.csv"))
            .exit_code,
        0);
    auto a = read_json(dir / "a.json")["runs"][0]["losses"];
    auto b = read_json(dir / "b.json")["runs"][0]["losses"];
    EXPECT_EQ(a, b);
}

TEST(EndToEnd, SeedExperimentSkipsEveryBackendThatIsNotBuiltWithItsReason) {
    TempDir dir;
    auto r = run_harness("run " + config("hourglass8.yaml") +
                         " --backends libtorch-cuda,cudnn,cudnn-bf16-graphs --iterations 1 "
                         "--warmup 0 --output " +
                         (dir / "hg8.csv"));
    auto rows = harness::results::read_csv(dir / "hg8.csv");
    ASSERT_EQ(rows.size(), 3u) << r.output;
    // The math mode is the configured one, whether the backend ran or not.
    EXPECT_EQ(rows[2]["math_mode"], "bf16");
    bool ran = false;
    for (auto& row : rows) {
        if (row["status"] == "skipped") {
            EXPECT_FALSE(row["message"].empty());
        } else {
            EXPECT_EQ(row["status"], "ok") << row["backend"] << ": " << row["message"];
            ran = true;
        }
    }
    // Without a GPU nothing ran, which is not a success (exit 4).
    EXPECT_EQ(r.exit_code, ran ? 0 : 4) << r.output;
}

TEST(EndToEnd, InfoReportsParameterAndFlopCountsAsJson) {
    auto r = run_harness("info " + config("hourglass8.yaml") + " --json", "",
                         harness::testing::Stderr::discarded);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto j = nlohmann::json::parse(r.output);
    EXPECT_EQ(j["parameters"].get<int64_t>(), 25434112);
    EXPECT_EQ(j["flops_per_image_forward"].get<int64_t>(), 55228301312);
    EXPECT_EQ(j["flops_per_training_step"].get<int64_t>(), 994109423616);
    EXPECT_EQ(j["model"]["stacks"].get<int>(), 8);
    EXPECT_GT(j["activation_bytes"].get<int64_t>(), 0);
}

TEST(EndToEnd, InfoPrintsAReadableSummary) {
    auto r = run_harness("info " + config("hourglass2.yaml"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("parameters    6570400 trainable"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("GFLOP per training step"), std::string::npos) << r.output;
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
    auto r = run_harness("run " + config("tiny.yaml") + " --backends nosuch --output " +
                         (dir / "x.csv"));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.output.find("no backend 'nosuch'"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("it has: reference"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir / "x.csv"));
    EXPECT_EQ(run_harness("run " + config("tiny.yaml") + " --iterations 0").exit_code, 2);
    EXPECT_EQ(run_harness("run").exit_code, 2);
    EXPECT_EQ(run_harness("frobnicate").exit_code, 2);
    EXPECT_EQ(run_harness("run " + config("tiny.yaml") + " --iterations abc").exit_code, 2);
    EXPECT_EQ(run_harness("run /nonexistent.yaml").exit_code, 2);
}

// A plugin option is checked against what the plugin declares (ABI 2.4) before anything runs: an
// unknown key or an ill-typed value is a config error at its place, for run, check and layers.
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
                            "gemm_kernel, precision, rounding_seed, rounding_bits)"),
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
    auto r = run_harness("run " + config("tiny.yaml") + " --output " + csv);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("another run is writing"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(csv));
    ::close(held);
    fs::remove(csv + ".lock");

    r = run_harness("run " + config("tiny.yaml") + " --output " + csv);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(fs::exists(csv));
    EXPECT_FALSE(fs::exists(csv + ".lock"));
}

// An empty --backends (an unset shell variable) selects nothing: a usage error, not every backend.
TEST(EndToEnd, AnEmptyBackendListIsAUsageError) {
    TempDir dir;
    const std::string output = " --output " + (dir / "x.csv");
    for (const std::string& command :
         {"run " + config("tiny.yaml") + output, "check " + config("tiny.yaml")}) {
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
        r = run_harness("run " + config("tiny.yaml") + " " + option + " abc");
        EXPECT_EQ(r.exit_code, 2) << option;
        EXPECT_NE(r.output.find(option + ": 'abc' is not a whole number"), std::string::npos)
            << r.output;
        r = run_harness("run " + config("tiny.yaml") + " " + option + " -5");
        EXPECT_EQ(r.exit_code, 2) << option;
        EXPECT_NE(r.output.find(option + ": -5 is out of range"), std::string::npos) << r.output;
    }
    r = run_harness("check " + config("tiny.yaml") + " --steps 2x");
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
    auto r = run_harness("run " + config("tiny.yaml") + " --iterations 1 --warmup 0 --dump " +
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
        "run " + config("tiny.yaml") + " --iterations 1 --json --output " + (dir / "x.csv"), "",
        harness::testing::Stderr::discarded);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto j = nlohmann::json::parse(r.output);
    EXPECT_EQ(j["runs"][0]["status"], "ok");
    EXPECT_EQ(j["provenance"]["config_name"], "tiny");
    EXPECT_TRUE(j["provenance"]["environment_warnings"].is_string());
}

TEST(EndToEnd, ListShowsTheReferencePlugin) {
    auto r = run_harness("list");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("reference 1.0.0 (ABI 2.5)"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("device cpu"), std::string::npos) << r.output;
    EXPECT_NE(
        r.output.find("options: threads (1..1024), gemm_kernel (auto|portable|avx2_fma; default "
                      "auto)"),
        std::string::npos)
        << r.output;
}

}  // namespace

namespace {

TEST(EndToEnd, ReportTurnsCsvsIntoAMarkdownTableWithRatios) {
    TempDir dir;
    ASSERT_EQ(run_harness("run " + config("check.yaml") +
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
    const auto rows = harness::results::read_csv(dir / "a.csv");
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
    ASSERT_EQ(
        run_harness("run " + config("tiny.yaml") + " --iterations 3 --output " + (dir / "t.csv"))
            .exit_code,
        0);
    auto r = run_harness("report " + (dir / "t.csv") + " --charts " + (dir / "out/charts") +
                         " --output " + (dir / "out/t.md"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    for (const char* chart : {"tiny-step-time", "tiny-phases", "tiny-samples"}) {
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
}

TEST(EndToEnd, ReportChartsWithoutGnuplotSayWhatIsMissing) {
    TempDir dir;
    ASSERT_EQ(
        run_harness("run " + config("tiny.yaml") + " --iterations 2 --output " + (dir / "t.csv"))
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

}  // namespace
