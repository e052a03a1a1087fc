// `harness` from the outside: every file and folder a command will write is checked before anything
// runs, and none may be an input or another destination.
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
        {"--output /proc/hb-test/x.csv",
         "--output: cannot write /proc/hb-test/x.csv: no file can be made in /proc ("},
        {"--output /proc/x.csv", "--output: cannot write /proc/x.csv: no file can be made in /proc ("},
        {"--dump {dir}/file", "--dump: {dir}/file is a file, not a folder"},
        {"--dump /proc/hb-dump", "--dump: cannot write /proc/hb-dump: no file can be made in /proc"},
        {"--trace {dir}/file", "--trace: {dir}/file is a file, not a folder"},
        {"--output {dir}/new/x.csv --dump {dir}/file", "--dump: {dir}/file is a file"},
        {"--output {dir}/new/x.csv --trace /proc/hb-trace", "--trace: cannot write /proc/hb-trace: no file can be made in /proc"},
    };
    for (const auto& c : cases) {
        TempDir dir;
        fs::create_directories(dir / "taken.csv");
        fs::create_directories(dir / "sidecar.json");
        std::ofstream(dir / "file") << "a file\n";
        const auto before = listing(dir.path());
        // From inside the folder, so that the default output would be its runs/.
        auto r = run_harness(
            "run " + shipped_config("tiny.yaml") + " " + in_dir(c.arguments, dir.path().string()),
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
    fs::copy_file(shipped_config("tiny.yaml"), yaml);
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
    EXPECT_EQ(harness::output::read_csv(dir / "r.json").size(), 1u);
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

}  // namespace
