// The stopping rule of a run of rounds (run/stopping.hpp) on synthetic streams of steps whose
// ratio and spread are known: it stops at the target, at the budget or at the most rounds, and
// never before two rounds nor before the plan's least.
#include "run/stopping.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace {

using harness::output::BackendRun;
using harness::run::Stop;

// Rounds of "base" and of "x", which takes `ratio` times its time: each round moves both by a
// shared factor and "x" by its own (sd `round_sd`, log scale), each step by `step_sd`.
class Stream {
public:
    Stream(double ratio, double round_sd, double step_sd)
        : ratio_(ratio), round_sd_(round_sd), step_sd_(step_sd) {}

    void add_round() {
        ++round_;
        const double shared = std::exp(0.05 * normal_(engine_));
        const double own = std::exp(round_sd_ * normal_(engine_));
        runs_.push_back(run("base", 100 * shared));
        runs_.push_back(run("x", 100 * ratio_ * shared * own));
    }
    const std::vector<BackendRun>& runs() const { return runs_; }

private:
    BackendRun run(const std::string& name, double ms) {
        BackendRun r;
        r.backend = name;
        r.status = harness::output::Status::ok;
        r.round = round_;
        for (int i = 0; i < 5; ++i) r.samples_ms.push_back(ms * std::exp(step_sd_ * normal_(engine_)));
        return r;
    }
    double ratio_, round_sd_, step_sd_;
    int round_ = 0;
    std::vector<BackendRun> runs_;
    std::mt19937_64 engine_{7};
    std::normal_distribution<double> normal_{0, 1};
};

harness::output::RoundPlan plan(int least, int most, double target, double budget_s) {
    return {least, most, target, budget_s, "base", ""};
}

TEST(Stopping, StopsAtTheTargetAndNeverBeforeTwoRounds) {
    Stream stream(1.3, 0.01, 0.01);
    const auto p = plan(1, 50, 0.02, 0);
    int round = 0;
    Stop stop = Stop::no;
    while (stop == Stop::no) {
        stream.add_round();
        ++round;
        stop = harness::run::stop_after(p, round, stream.runs(), "sha", round * 10.0, 10);
        if (round == 1) {
            EXPECT_EQ(stop, Stop::no);
        }
    }
    EXPECT_EQ(stop, Stop::target);
    EXPECT_GE(round, 3);  // two rounds give t(0.975, 1) = 12.7: far too wide for ±2%
    EXPECT_LT(round, 50);
    const auto backends = harness::output::rounds_by_backend(stream.runs());
    const auto c = harness::output::compare_rounds(backends, 0, "sha")[1];
    EXPECT_LE(harness::output::relative_half_width(c), 0.02);
    EXPECT_TRUE(c.ratio_interval.contains(1.3)) << c.ratio_interval.lo << " " << c.ratio_interval.hi;
}

TEST(Stopping, StopsBeforeARoundThatWouldEndPastTheBudget) {
    Stream stream(1.3, 0.2, 0.05);  // far too noisy for ±1% in any affordable number of rounds
    const auto p = plan(3, 50, 0.01, 55);
    for (int round = 1; round <= 5; ++round) {
        stream.add_round();
        const Stop stop = harness::run::stop_after(p, round, stream.runs(), "sha", round * 10.0, 10);
        // 50 s + another 10 s round is past 55 s.
        EXPECT_EQ(stop, round < 5 ? Stop::no : Stop::budget) << "round " << round;
    }
    // A budget is a budget: one too small for the least rounds stops the run before a round that
    // would end past it, however few have run.
    const auto tight = plan(3, 50, 0, 25);
    EXPECT_EQ(harness::run::stop_after(tight, 1, stream.runs(), "sha", 10, 10), Stop::no);
    EXPECT_EQ(harness::run::stop_after(tight, 2, stream.runs(), "sha", 20, 10), Stop::budget);
}

// A backend whose interval is within the target runs no more rounds, from the plan's least on;
// a noisy one goes on, and the baseline is never done.
TEST(Stopping, ABackendWithinTheTargetIsDoneBeforeTheOthers) {
    std::mt19937_64 engine(3);
    std::normal_distribution<double> normal(0, 1);
    std::vector<BackendRun> runs;
    auto add = [&](const std::string& name, int round, double ms) {
        BackendRun r;
        r.backend = name;
        r.status = harness::output::Status::ok;
        r.round = round;
        r.samples_ms = {ms, ms * 1.001};
        runs.push_back(r);
    };
    // Six rounds: with fewer, three backends' variances cannot be told apart, and each has the
    // pooled one (docs/statistics.md, "The rounds model").
    const auto p = plan(6, 50, 0.02, 0);
    for (int round = 1; round <= 8; ++round) {
        const double shared = std::exp(0.05 * normal(engine));
        add("base", round, 100 * shared);
        add("quiet", round, 130 * shared * std::exp(0.002 * normal(engine)));
        add("noisy", round, 70 * shared * std::exp(0.2 * normal(engine)));
        const auto done = harness::run::within_target(p, round, runs, "sha");
        if (round < 6) {
            EXPECT_TRUE(done.empty()) << "round " << round;
        } else {
            EXPECT_EQ(std::count(done.begin(), done.end(), "noisy"), 0) << "round " << round;
            if (round == 8) {
                EXPECT_EQ(done, std::vector<std::string>{"quiet"});
            }
        }
    }
    // The noisy backend keeps the run going; once it has stopped running, nothing waits for it.
    EXPECT_EQ(harness::run::stop_after(p, 8, runs, "sha", 0, 0), Stop::no);
    add("base", 9, 100);
    add("quiet", 9, 130);
    EXPECT_EQ(harness::run::stop_after(p, 9, runs, "sha", 0, 0), Stop::target);
}

TEST(Stopping, StopsAtTheMostRoundsAndWithoutABaselineNeverAtTheTarget) {
    Stream stream(1.3, 0.0, 0.0);
    for (int round = 1; round <= 4; ++round) stream.add_round();
    EXPECT_EQ(harness::run::stop_after(plan(1, 4, 0.5, 0), 4, stream.runs(), "sha", 0, 0),
              Stop::max_rounds);
    EXPECT_EQ(harness::run::stop_after(plan(1, 9, 0.5, 0), 3, stream.runs(), "sha", 0, 0),
              Stop::target);
    auto nobody = plan(1, 9, 0.5, 0);
    nobody.baseline = "nobody";
    EXPECT_EQ(harness::run::stop_after(nobody, 3, stream.runs(), "sha", 0, 0), Stop::no);
    // Fixed rounds: as many as planned.
    EXPECT_EQ(harness::run::stop_after(plan(3, 3, 0, 0), 2, stream.runs(), "sha", 0, 0), Stop::no);
    EXPECT_EQ(harness::run::stop_after(plan(3, 3, 0, 0), 3, stream.runs(), "sha", 0, 0),
              Stop::max_rounds);
}

}  // namespace
