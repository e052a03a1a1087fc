// A run with broken plugins and interrupts: the broken ones are reported while the others still
// produce their rows, and an interrupted run keeps what it measured and leaves no worker behind.
#include "harness_process.hpp"
#include "output/csv_reader.hpp"
#include "plugin_host/plugin_library.hpp"
#include "plugin_host/plugin_listing.hpp"
#include "run/provenance.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

namespace {

using harness::plugin_host::PluginCallError;
using harness::plugin_host::PluginLibrary;
using harness::plugin_host::PluginLoadError;
using harness::testing::fake_plugins_env;
using harness::testing::run_harness;
using harness::testing::TempDir;

// Every worker runs the binary its run started with: the harness's file rebuilt or deleted while
// a run goes on changes nothing of the run.
TEST(HarnessRun, EveryWorkerRunsTheRunsOwnBinaryWhenItsFileIsGone) {
    TempDir dir;
    const std::string copy = dir / "harness", config = dir / "slow.yaml";
    std::filesystem::copy_file(harness::testing::harness_binary(), copy);
    std::ofstream(config) << "model: {stacks: 1, features: 8, depth: 1, joints: 2, input_size: 16, "
                             "batch: 2}\nrun: {warmup: 0, iterations: 10}\nbackends:\n"
                             "  - {name: first, plugin: fake_slow}\n"
                             "  - {name: second, plugin: fake_slow}\n";
    // The second worker starts a second after the run, half a second after the file is gone.
    const std::string command = fake_plugins_env() + " " + copy + " run " + config + " --output " +
                                (dir / "o.csv") + " >" + (dir / "log") + " 2>&1 & sleep 0.5; rm " +
                                copy + "; wait $!";
    const int status = std::system(command.c_str());
    std::ifstream log(dir / "log");
    const std::string output((std::istreambuf_iterator<char>(log)),
                             std::istreambuf_iterator<char>());
    ASSERT_TRUE(WIFEXITED(status)) << output;
    EXPECT_EQ(WEXITSTATUS(status), 0) << output;
    EXPECT_FALSE(std::filesystem::exists(copy));
    const auto rows = harness::output::read_csv(dir / "o.csv");
    ASSERT_EQ(rows.size(), 2u) << output;
    for (const auto& row : rows) EXPECT_EQ(row.at("status"), "ok") << output;
}

TEST(HarnessRun, BrokenBackendsAreReportedAndTheRunGoesOn) {
    TempDir dir;
    const std::string csv = dir / "fakes.csv";
    auto r = run_harness("run " + std::string(HB_TEST_DATA_DIR) + "/fakes.yaml --output " + csv,
                         fake_plugins_env());
    EXPECT_EQ(r.exit_code, 1) << r.output;  // some backends failed

    auto rows = harness::output::read_csv(csv);
    std::map<std::string, std::map<std::string, std::string>> by_backend;
    for (auto& row : rows) by_backend[row["backend"]] = row;
    ASSERT_EQ(rows.size(), 10u) << r.output;

    EXPECT_EQ(by_backend["good"]["status"], "ok");
    EXPECT_EQ(by_backend["also_good"]["status"], "ok");
    EXPECT_EQ(by_backend["good"]["first_loss"], "1");
    EXPECT_EQ(by_backend["good"]["last_loss"], "0.25");

    EXPECT_EQ(by_backend["throws"]["status"], "failed");
    EXPECT_NE(by_backend["throws"]["message"].find("deliberate failure in step"),
              std::string::npos);
    EXPECT_EQ(by_backend["crashes"]["status"], "crashed");
    EXPECT_NE(by_backend["crashes"]["message"].find("signal 11"), std::string::npos);
    EXPECT_EQ(by_backend["hangs"]["status"], "timeout");
    EXPECT_EQ(by_backend["unavailable"]["status"], "skipped");
    EXPECT_NE(by_backend["unavailable"]["message"].find("deliberately unavailable"),
              std::string::npos);
    EXPECT_EQ(by_backend["nan"]["nonfinite_loss"], "true");
    // The two good ones start from the same loss; a NaN agrees with nothing.
    EXPECT_EQ(by_backend["good"]["loss_agreement"], "ok");
    EXPECT_EQ(by_backend["also_good"]["loss_agreement"], "ok");
    EXPECT_EQ(by_backend["nan"]["loss_agreement"], "disagrees");
    EXPECT_EQ(by_backend["throws"]["loss_agreement"], "");
    EXPECT_EQ(by_backend["wrong_abi"]["status"], "failed");
    EXPECT_NE(by_backend["wrong_abi"]["message"].find("99.3"), std::string::npos);
    EXPECT_EQ(by_backend["missing"]["status"], "skipped");
    EXPECT_NE(by_backend["missing"]["message"].find("hb_fake_not_built.so"), std::string::npos);
    EXPECT_EQ(by_backend["skipped_at_configure"]["status"], "skipped");
    EXPECT_NE(by_backend["skipped_at_configure"]["message"].find(
                  "configure said: not built: deliberately, for the test"),
              std::string::npos)
        << by_backend["skipped_at_configure"]["message"];
}

TEST(HarnessRun, WhatPluginsWriteToStderrIsKeptInTheirRowsNotOnTheConsole) {
    TempDir dir;
    const std::string csv = dir / "log.csv";
    auto r = run_harness("run " + std::string(HB_TEST_DATA_DIR) + "/fakes_log.yaml --output " + csv,
                         fake_plugins_env());
    EXPECT_EQ(r.exit_code, 1) << r.output;  // `crashes` crashed

    std::ifstream in(dir / "log.json");
    const auto sidecar = nlohmann::json::parse(in);
    std::map<std::string, nlohmann::json> rows;
    for (const auto& row : sidecar["runs"]) rows[row["backend"].get<std::string>()] = row;
    ASSERT_EQ(rows.size(), 3u) << r.output;
    EXPECT_FALSE(rows["good"].contains("log"));
    EXPECT_EQ(rows["chatty"]["status"], "ok");
    EXPECT_EQ(rows["chatty"]["log"].get<std::string>().rfind("fake: log line 1\n", 0), 0u);
    EXPECT_NE(rows["chatty"]["log"].get<std::string>().find("fake: log line 15\n"),
              std::string::npos);
    EXPECT_EQ(rows["crashes"]["status"], "crashed");
    EXPECT_EQ(rows["crashes"]["log"], "fake: last words before the crash\n");
    // The row's message says why, not only how it ended.
    EXPECT_EQ(rows["crashes"]["message"],
              "worker killed by signal 11 (Segmentation fault): fake: last words before the crash");

    // A working backend's lines are counted, a failed one's shown.
    EXPECT_EQ(r.output.find("fake: log line"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("the libraries wrote 15 lines to stderr, kept in the JSON row's"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("  fake: last words before the crash"), std::string::npos) << r.output;
}

// A manifest without the math mode (or with a word outside the vocabulary) is the plugin's
// defect: its row fails, naming the key, instead of being taken as float32.
TEST(HarnessRun, AManifestWithoutItsMathModeFailsItsRowNamingTheKey) {
    TempDir dir;
    const std::string csv = dir / "m.csv";
    auto r = run_harness(
        "run " + std::string(HB_TEST_DATA_DIR) + "/manifest_defects.yaml --output " + csv,
        fake_plugins_env());
    EXPECT_EQ(r.exit_code, 1) << r.output;
    std::map<std::string, std::map<std::string, std::string>> rows;
    for (auto& row : harness::output::read_csv(csv)) rows[row["backend"]] = row;
    EXPECT_EQ(rows["good"]["status"], "ok");
    EXPECT_EQ(rows["good"]["math_mode"], "fp32");
    EXPECT_EQ(rows["no_math"]["status"], "failed");
    EXPECT_NE(rows["no_math"]["message"].find("plugin defect: its manifest has no \"math\" (one "
                                              "of fp32, fp64, tf32, fp16, bf16)"),
              std::string::npos)
        << rows["no_math"]["message"];
    EXPECT_EQ(rows["odd_math"]["status"], "failed");
    EXPECT_NE(rows["odd_math"]["message"].find("\"math\": \"fp23\", none of fp32"),
              std::string::npos)
        << rows["odd_math"]["message"];
}

TEST(HarnessRun, AnInterruptedRunKeepsTheRowsItFinished) {
    TempDir dir;
    const std::string csv = dir / "interrupt.csv";
    auto r = run_harness("run " + std::string(HB_TEST_DATA_DIR) + "/interrupt.yaml --output " + csv,
                         fake_plugins_env() + " timeout --preserve-status -s INT 3");
    EXPECT_EQ(r.exit_code, 130) << r.output;
    auto rows = harness::output::read_csv(csv);
    ASSERT_EQ(rows.size(), 2u) << r.output;
    EXPECT_EQ(rows[0]["status"], "ok");
    // The hanging step never ends: the worker is killed, and its row says that nothing was kept.
    EXPECT_EQ(rows[1]["status"], "interrupted");
    EXPECT_EQ(rows[1]["message"], "interrupted before the worker wrote its result: no step kept");
    for (const auto& f : std::filesystem::directory_iterator(dir.path()))
        EXPECT_EQ(f.path().filename().string().find(".tmp"), std::string::npos) << f.path();
}

// A worker whose step never ends is given time to finish it after an interrupt; a second
// interrupt ends it at once.
TEST(HarnessRun, ASecondInterruptStopsAWorkerAtOnce) {
    TempDir dir;
    const std::string csv = dir / "twice.csv";
    const auto start = std::chrono::steady_clock::now();
    // The harness in the background, interrupted at 3 s and again at 4 s.
    auto r = run_harness(
        "run " + std::string(HB_TEST_DATA_DIR) + "/interrupt.yaml --output " + csv,
        fake_plugins_env() +
            " sh -c '\"$0\" \"$@\" & p=$!; sleep 3; kill -INT $p; sleep 1; kill -INT $p; "
            "wait $p'");
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(r.exit_code, 130) << r.output;
    EXPECT_LT(seconds, 8.0) << r.output;  // not the 10 s given to a worker to finish its step
    auto rows = harness::output::read_csv(csv);
    ASSERT_EQ(rows.size(), 2u) << r.output;
    EXPECT_EQ(rows[1]["status"], "interrupted");
}

// The processes whose command line holds `text`, with their pids.
std::vector<std::string> processes_mentioning(const std::string& text) {
    std::vector<std::string> found;
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
        const std::string pid = entry.path().filename().string();
        if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream in(entry.path() / "cmdline");
        std::string line((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        for (char& c : line)
            if (c == '\0') c = ' ';
        if (line.find(text) != std::string::npos) found.push_back(pid + ": " + line);
    }
    return found;
}

// SIGKILL leaves the harness no chance to stop its worker: the worker, whose step never ends,
// is killed with it by its death signal.
TEST(HarnessRun, AKilledHarnessLeavesNoWorker) {
    TempDir dir;
    const std::string config = dir / "orphan.yaml";
    std::filesystem::copy_file(std::string(HB_TEST_DATA_DIR) + "/interrupt.yaml", config);
    // The harness's output goes to a file, so that a worker left behind, holding it, cannot keep
    // the test waiting.
    auto r =
        run_harness("run " + config + " --output " + (dir / "orphan.csv"),
                    fake_plugins_env() + " sh -c '\"$0\" \"$@\" > " + (dir / "out.txt") +
                        " 2>&1 & p=$!; sleep 3; kill -KILL $p; wait $p; s=$?; sleep 1; exit $s'");
    EXPECT_EQ(r.exit_code, 128 + 9) << r.output;
    const std::vector<std::string> left = processes_mentioning(config);
    for (const auto& p : left) kill(std::stoi(p), SIGKILL);
    EXPECT_TRUE(left.empty()) << left.front();
}

// SIGINT after a few of the slow backend's steps: the worker finishes the step in progress and
// writes the steps it completed; the row is `interrupted`, partial, with statistics from those
// steps, and the backends after it never start.
TEST(HarnessRun, AnInterruptKeepsTheCompletedStepsOfTheRunningBackend) {
    TempDir dir;
    const std::string csv = dir / "slow.csv";
    auto r =
        run_harness("run " + std::string(HB_TEST_DATA_DIR) + "/slow_interrupt.yaml --output " + csv,
                    fake_plugins_env() + " timeout --preserve-status -s INT 3");
    EXPECT_EQ(r.exit_code, 130) << r.output;
    auto rows = harness::output::read_csv(csv);
    ASSERT_EQ(rows.size(), 1u) << r.output;
    auto& row = rows[0];
    EXPECT_EQ(row["status"], "interrupted") << row["message"];
    EXPECT_EQ(row["message"].find("interrupted after "), 0u) << row["message"];
    EXPECT_NE(row["message"].find(" of 200 timed steps (partial"), std::string::npos)
        << row["message"];
    EXPECT_EQ(row["iterations"], "200");
    ASSERT_FALSE(row["median_ms"].empty()) << r.output;
    EXPECT_GE(std::stod(row["median_ms"]), 100.0);
    EXPECT_EQ(row["first_loss"], "1");

    std::ifstream in(dir / "slow.json");
    const auto sidecar = nlohmann::json::parse(in);
    const auto& run = sidecar["runs"][0];
    const size_t samples = run["samples_ms"].size();
    EXPECT_GE(samples, 1u);
    EXPECT_LT(samples, 200u);
    EXPECT_EQ(run["losses"].size(), samples);
    EXPECT_EQ(row["message"],
              "interrupted after " + std::to_string(samples) +
                  " of 200 timed steps (partial: the figures are from those steps)");
}

// A device is "skipped" only when the plugin has it, or devices of its kind, and this machine
// lacks it; a kind of device the plugin does not run on is an error of the config's.
TEST(HarnessRun, ADeviceThePluginHasButTheMachineLacksIsSkippedAnotherKindFails) {
    TempDir dir;
    const std::string csv = dir / "devices.csv";
    auto r = run_harness("run " + std::string(HB_TEST_DATA_DIR) + "/devices.yaml --output " + csv,
                         fake_plugins_env());
    EXPECT_EQ(r.exit_code, 1) << r.output;
    auto rows = harness::output::read_csv(csv);
    ASSERT_EQ(rows.size(), 3u) << r.output;
    EXPECT_EQ(rows[0]["status"], "ok") << rows[0]["message"];
    EXPECT_EQ(rows[1]["status"], "skipped");
    EXPECT_EQ(rows[1]["message"], "device cuda:1 not on this machine (fake offers: cpu, cuda:0)");
    EXPECT_EQ(rows[2]["status"], "failed");
    EXPECT_EQ(rows[2]["message"], "plugin fake does not run on cuda devices (it offers: cpu)");
}

// A run in which every backend was skipped measured nothing: not a success.
TEST(HarnessRun, ARunInWhichNoBackendRanIsNotASuccess) {
    TempDir dir;
    const std::string csv = dir / "skipped.csv";
    auto r =
        run_harness("run " + std::string(HB_TEST_DATA_DIR) + "/all_skipped.yaml --output " + csv,
                    fake_plugins_env());
    EXPECT_EQ(r.exit_code, 4) << r.output;
    EXPECT_NE(r.output.find("no backend ran: each of the 2 selected was skipped"),
              std::string::npos)
        << r.output;
    EXPECT_EQ(harness::output::read_csv(csv).size(), 2u);  // the rows say why
}

}  // namespace
