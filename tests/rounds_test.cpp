// Rounds inside `harness run` (docs/statistics.md, "Rounds"): the order drawn anew each round and
// recorded, a fresh worker for every backend in every round, and the run's table and
// `harness report` reading the rounds of one file as the rounds of several.
#include "harness_process.hpp"
#include "output/csv_reader.hpp"
#include "plugin_host/child_process.hpp"
#include "run/live_worker.hpp"
#include "run/paired_round.hpp"
#include "run/round_order.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <thread>

namespace {

using harness::run::round_order;
using harness::run::step_order;
using harness::testing::run_harness;
using harness::testing::TempDir;

TEST(RoundOrder, IsAPermutationThatTheSeedAndTheRoundFix) {
    for (size_t n : {0u, 1u, 2u, 7u}) {
        std::vector<size_t> order = round_order(n, 42, 1);
        EXPECT_EQ(order, round_order(n, 42, 1));
        std::sort(order.begin(), order.end());
        for (size_t i = 0; i < n; ++i) EXPECT_EQ(order[i], i);
    }
    // Another round or another seed draws another order (seven entries: 5040 orders).
    EXPECT_NE(round_order(7, 42, 1), round_order(7, 42, 2));
    EXPECT_NE(round_order(7, 42, 1), round_order(7, 43, 1));
}

// Each of three backends runs first, second and third about equally often.
TEST(RoundOrder, EveryBackendTakesEveryPlaceAsOften) {
    constexpr int kRounds = 3000;
    std::map<std::pair<size_t, size_t>, int> count;  // (backend, place) -> rounds
    for (int round = 1; round <= kRounds; ++round) {
        const std::vector<size_t> order = round_order(3, 7, round);
        for (size_t place = 0; place < order.size(); ++place) ++count[{order[place], place}];
    }
    // Binomial(3000, 1/3): sd 26; 5 sd either side.
    for (const auto& [key, n] : count) {
        EXPECT_GT(n, 1000 - 130) << key.first << " at " << key.second;
        EXPECT_LT(n, 1000 + 130) << key.first << " at " << key.second;
    }
}

TEST(StepOrder, IsAPermutationThatTheSeedTheRoundAndTheSlotFix) {
    for (size_t n : {0u, 1u, 2u, 6u}) {
        std::vector<size_t> order = step_order(n, 42, 1, 0);
        EXPECT_EQ(order, step_order(n, 42, 1, 0));
        std::sort(order.begin(), order.end());
        for (size_t i = 0; i < n; ++i) EXPECT_EQ(order[i], i);
    }
    EXPECT_NE(step_order(6, 42, 1, 0), step_order(6, 42, 1, 1));
    EXPECT_NE(step_order(6, 42, 1, 0), step_order(6, 42, 2, 0));
    EXPECT_NE(step_order(6, 42, 1, 0), step_order(6, 43, 1, 0));
}

// The CPU time of process `pid` so far (utime + stime), in clock ticks.
long cpu_ticks(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), {});
    std::istringstream fields(text.substr(text.rfind(')') + 2));
    std::string field;
    long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && fields >> field; ++i) {
        if (i == 14) utime = std::stol(field);
        if (i == 15) stime = std::stol(field);
    }
    return utime + stime;
}

// A paired worker waits stopped (SIGSTOP): however busy its threads were, it takes no CPU until
// it is resumed.
TEST(PairedSteps, AStoppedWorkerTakesNoCpu) {
    harness::plugin_host::ChildProcess busy({"/bin/sh", "-c", "while :; do :; done"});
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    busy.send(SIGSTOP);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const long stopped = cpu_ticks(busy.pid());
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    EXPECT_EQ(cpu_ticks(busy.pid()), stopped);
    busy.send(SIGCONT);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    EXPECT_GT(cpu_ticks(busy.pid()), stopped);
}

// Workers are admitted beside others while the memory available holds 1.25 times the peak
// expected of them: their own from an earlier round, else the largest seen.
TEST(PairedSteps, MemoryAdmitsWhatTheAvailableMemoryHolds) {
    harness::run::MemoryBook memory;
    EXPECT_TRUE(memory.admits(0, 0));
    EXPECT_TRUE(memory.admits(0, 3));  // nothing seen yet
    const double available = harness::run::available_memory_bytes();
    ASSERT_GT(available, 0);
    memory.record(0, available / 2);
    EXPECT_TRUE(memory.admits(1, 1));
    memory.record(1, available);
    EXPECT_FALSE(memory.admits(1, 1));
    EXPECT_FALSE(memory.admits(2, 1));  // unseen: expected as large as the largest
    EXPECT_TRUE(memory.admits(0, 1));
    EXPECT_TRUE(memory.admits(2, 0));  // alone, always
}

class RoundsRun : public ::testing::Test {
protected:
    // Three fake backends that name their worker's process, and one that never runs.
    std::string write_config(const std::string& run_section) {
        const std::string path = dir_ / "rounds.yaml";
        std::ofstream(path) << "model: {stacks: 1, features: 8, depth: 1, joints: 2, "
                               "input_size: 16, batch: 2}\n"
                            << run_section
                            << "backends:\n"
                               "  - {name: a, plugin: fake_pid}\n"
                               "  - {name: b, plugin: fake_pid}\n"
                               "  - {name: unavailable, plugin: fake_unavailable}\n"
                               "  - {name: c, plugin: fake_pid}\n";
        return path;
    }
    std::string env() const { return harness::testing::fake_plugins_env(); }
    TempDir dir_;
};

TEST_F(RoundsRun, EachRoundRunsEveryBackendInAFreshWorkerInTheOrderItRecords) {
    const std::string config = write_config("run: {warmup: 0, iterations: 3}\n");
    const std::string csv = dir_ / "r.csv";
    auto run = run_harness(
        "run " + config + " --rounds 3 --order-seed 11 --interleave workers --output " + csv,
        env());
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_NE(run.output.find("[round 3/3, 3/3]"), std::string::npos) << run.output;

    const auto rows = harness::output::read_csv(csv);
    // The unavailable backend is skipped in the first round and not tried again.
    ASSERT_EQ(rows.size(), 1u + 3 * 3) << run.output;
    const std::vector<std::string> names = {"a", "b", "unavailable", "c"};
    std::set<std::string> processes;
    size_t row = 0;
    for (int round = 1; round <= 3; ++round) {
        for (size_t entry : round_order(names.size(), 11, round)) {
            if (round > 1 && names[entry] == "unavailable") continue;
            ASSERT_LT(row, rows.size());
            EXPECT_EQ(rows[row].at("backend"), names[entry]) << "round " << round;
            EXPECT_EQ(rows[row].at("round"), std::to_string(round));
            EXPECT_EQ(rows[row].at("order_seed"), "11");
            if (rows[row].at("status") == "ok") processes.insert(rows[row].at("libraries"));
            ++row;
        }
    }
    EXPECT_EQ(processes.size(), 9u) << "a worker served more than one run";

    const nlohmann::json sidecar = harness::testing::read_json(dir_ / "r.json");
    EXPECT_EQ(sidecar.at("provenance").at("order_seed"), 11u);
    for (size_t i = 0; i < rows.size(); ++i)
        EXPECT_EQ(std::to_string(sidecar.at("runs").at(i).at("round").get<int>()),
                  rows[i].at("round"));
}

// Paired steps (the default): in each round every worker is alive, and the timed steps go in
// slots, one step of each worker per slot in the order step_order draws from the seed, recorded
// in each row's step_sequence; the same seed takes them in the same order again.
TEST_F(RoundsRun, PairedStepsInterleaveTheWorkersInTheOrderTheSeedDraws) {
    const std::string config = write_config("run: {warmup: 1, iterations: 3}\n");
    auto sequences = [&](const std::string& csv) {
        auto run =
            run_harness("run " + config + " --rounds 2 --order-seed 11 --output " + csv, env());
        EXPECT_EQ(run.exit_code, 0) << run.output;
        // (round, place in the round's sequence) -> backend
        std::map<std::pair<int, int>, std::string> steps;
        const nlohmann::json sidecar =
            harness::testing::read_json(csv.substr(0, csv.size() - 4) + ".json");
        EXPECT_TRUE(sidecar.at("provenance").at("rounds").at("paired_steps").get<bool>());
        std::set<std::string> processes;
        for (const auto& r : sidecar.at("runs")) {
            if (r.at("status") != "ok") continue;
            processes.insert(r.at("libraries").dump());
            const auto places = r.at("step_sequence").get<std::vector<int>>();
            EXPECT_EQ(places.size(), 3u);
            for (int place : places)
                steps[{r.at("round").get<int>(), place}] = r.at("backend").get<std::string>();
        }
        EXPECT_EQ(processes.size(), 6u) << "a worker served more than one round";
        return steps;
    };
    const auto steps = sequences(dir_ / "r.csv");
    ASSERT_EQ(steps.size(), 2u * 9);
    const std::vector<std::string> names = {"a", "b", "unavailable", "c"};
    for (int round = 1; round <= 2; ++round) {
        std::vector<std::string> alive;  // in the order they started: the round's, less the one
        for (size_t entry : round_order(names.size(), 11, round))
            if (names[entry] != "unavailable") alive.push_back(names[entry]);
        for (int slot = 0; slot < 3; ++slot) {
            const std::vector<size_t> order = step_order(3, 11, round, slot);
            for (int i = 0; i < 3; ++i)
                EXPECT_EQ(steps.at({round, slot * 3 + i}), alive[order[static_cast<size_t>(i)]])
                    << "round " << round << " slot " << slot;
        }
    }
    EXPECT_EQ(sequences(dir_ / "again.csv"), steps);
}

// The config's run section chooses the rounds and the baseline; the table gives each backend's
// ratio to it over the rounds, as `harness report` does over the same file.
TEST_F(RoundsRun, TheTableAndTheReportGiveTheSameRatioOverTheRounds) {
    const std::string config =
        write_config("run: {warmup: 0, iterations: 4, rounds: 3, order_seed: 5, baseline: b}\n");
    const std::string csv = dir_ / "r.csv";
    auto run = run_harness("run " + config + " --output " + csv, env());
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_NE(run.output.find("vs b"), std::string::npos) << run.output;
    // The table lists the backends in the config's order, whatever order they ran in.
    const size_t table = run.output.find("\nbackend ");
    ASSERT_NE(table, std::string::npos) << run.output;
    EXPECT_LT(run.output.find("\na ", table), run.output.find("\nb ", table)) << run.output;
    EXPECT_LT(run.output.find("\nb ", table), run.output.find("\nunavailable ", table));
    EXPECT_LT(run.output.find("\nunavailable ", table), run.output.find("\nc ", table));
    const auto rows = harness::output::read_csv(csv);
    EXPECT_EQ(rows.back().at("round"), "3");
    EXPECT_EQ(rows.back().at("order_seed"), "5");

    auto report = run_harness("report " + csv + " --baseline b", env());
    ASSERT_EQ(report.exit_code, 0) << report.output;
    EXPECT_NE(report.output.find("over every round given"), std::string::npos) << report.output;
    for (const std::string name : {"a", "c"}) {
        const size_t at = report.output.find("| " + name + " | 3 | ");
        ASSERT_NE(at, std::string::npos) << report.output;
        const size_t from = at + name.size() + 8;
        const std::string ratio =
            report.output.substr(from, report.output.find(" |", from) - from);
        const size_t line = run.output.find("\n" + name + " ");
        ASSERT_NE(line, std::string::npos) << run.output;
        EXPECT_NE(run.output.substr(line, run.output.find('\n', line + 1) - line).find(ratio),
                  std::string::npos)
            << ratio << "\n"
            << run.output;
    }
}

// A run of several rounds is published as it is, every round's rows in its summary.
TEST_F(RoundsRun, IsPublishedWithEveryRound) {
    const std::string config = write_config("run: {warmup: 0, iterations: 2, rounds: 2}\n");
    const std::string csv = dir_ / "r.csv";
    auto run = run_harness("run " + config + " --output " + csv, env());
    ASSERT_EQ(run.exit_code, 0) << run.output;
    auto publish = run_harness(
        "publish " + csv + " --to " + (dir_ / "results/rounds") + " --allow-unchecked", env());
    ASSERT_EQ(publish.exit_code, 0) << publish.output;
    std::ifstream in(dir_ / "results/rounds/summary.md");
    const std::string summary((std::istreambuf_iterator<char>(in)), {});
    size_t rows = 0;
    for (size_t at = 0; (at = summary.find("\n| c | cpu | ok", at)) != std::string::npos; ++at)
        ++rows;
    EXPECT_EQ(rows, 2u) << summary;
}

// No entry ran in the first round: no later round would run anything.
TEST_F(RoundsRun, StopAfterTheFirstWhenNothingRan) {
    const std::string config = write_config("run: {rounds: 2, max_rounds: 9}\n");
    auto run = run_harness("run " + config + " --backends unavailable --output " + (dir_ / "r.csv"),
                           env());
    EXPECT_EQ(run.exit_code, 4) << run.output;
    EXPECT_NE(run.output.find("rounds: stopped after 1 round: no backend ran to run again"),
              std::string::npos)
        << run.output;
    EXPECT_EQ(harness::output::read_csv(dir_ / "r.csv").size(), 1u);
}

TEST_F(RoundsRun, ABaselineThatIsNotAnEntryIsAnErrorAtItsPlace) {
    const std::string config = write_config("run: {rounds: 2, baseline: nobody}\n");
    auto run = run_harness("run " + config + " --output " + (dir_ / "r.csv"), env());
    EXPECT_EQ(run.exit_code, 2) << run.output;
    EXPECT_NE(run.output.find("rounds.yaml:2:"), std::string::npos) << run.output;
    EXPECT_NE(run.output.find("key 'run.baseline'"), std::string::npos) << run.output;
    EXPECT_FALSE(std::filesystem::exists(dir_ / "r.csv"));

    auto flag = run_harness("run " + write_config("") + " --baseline nobody --output " +
                                (dir_ / "r.csv"),
                            env());
    EXPECT_EQ(flag.exit_code, 2) << flag.output;
    EXPECT_NE(flag.output.find("--baseline 'nobody'"), std::string::npos) << flag.output;
    EXPECT_FALSE(std::filesystem::exists(dir_ / "r.csv"));
}

}  // namespace
