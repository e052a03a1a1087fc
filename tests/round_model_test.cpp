// The rounds model (docs/statistics.md, "The rounds model"): exact on tables without noise, the
// paired Student's t for one backend, and calibrated on simulated runs whose rounds share noise.
#include "output/round_model.hpp"
#include "output/comparison_stats.hpp"
#include "output/round_comparison.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace {

using harness::output::compare_over_rounds;
using harness::output::Comparison;
using harness::output::StepsByRound;

std::vector<std::string> streams(size_t n) {
    std::vector<std::string> s;
    for (size_t i = 0; i < n; ++i) s.push_back("backend " + std::to_string(i));
    return s;
}

TEST(RoundFigure, IsTheLowerMedianSoOneDisturbedStepCannotMoveIt) {
    using harness::output::round_figure;
    EXPECT_EQ(round_figure({5266, 7252}), 5266);  // onednn's disturbed round on an EPYC
    EXPECT_EQ(round_figure({5300, 9000, 5200}), 5300);
    EXPECT_EQ(round_figure({5, 4, 9, 8}), 5);
    EXPECT_EQ(round_figure({3}), 3);
}

// Without noise of its own, every backend's ratio is known exactly, however much the rounds
// differ: a round's level falls on every backend alike.
TEST(RoundModel, ARoundsSharedLevelLeavesTheRatiosExact) {
    const std::vector<double> level = {100, 60, 130}, round = {1.0, 1.4, 0.7, 1.1};
    std::vector<StepsByRound> backends(level.size());
    for (size_t b = 0; b < level.size(); ++b)
        for (size_t r = 0; r < round.size(); ++r)
            backends[b].push_back(
                {static_cast<int>(r + 1), {level[b] * round[r], level[b] * round[r]}});
    const std::vector<Comparison> c = compare_over_rounds(backends, 0, streams(3));
    EXPECT_EQ(c[1].rounds, 4);
    EXPECT_NEAR(c[1].ratio, 0.6, 1e-12);
    EXPECT_NEAR(c[2].ratio, 1.3, 1e-12);
    // Within the least variance a backend is given (a sd of 1e-6 of the time).
    EXPECT_NEAR(c[2].ratio_interval.lo, 1.3, 1e-5);
    EXPECT_NEAR(c[2].ratio_interval.hi, 1.3, 1e-5);
    EXPECT_EQ(c[2].degrees_of_freedom, 12 - 3 - 3);
}

// With the baseline and one backend, the model is the paired comparison: Student's t over the
// rounds' log ratios, R - 1 degrees of freedom.
TEST(RoundModel, WithOneBackendIsStudentsTOverTheRounds) {
    const std::vector<StepsByRound> backends = {{{1, {10}}, {2, {10}}, {3, {20}}},
                                                {{1, {12}}, {2, {15}}, {3, {36}}}};
    const Comparison model = compare_over_rounds(backends, 0, streams(2))[1];
    const Comparison paired =
        harness::output::compare({{{12}, {10}}, {{15}, {10}}, {{36}, {20}}}, "paired");
    EXPECT_NEAR(model.ratio, paired.ratio, 1e-12);
    EXPECT_NEAR(model.ratio_interval.lo, paired.ratio_interval.lo, 1e-9);
    EXPECT_NEAR(model.ratio_interval.hi, paired.ratio_interval.hi, 1e-9);
    EXPECT_EQ(model.degrees_of_freedom, 2);
}

// A backend that ran fewer rounds than the others (stopped once within its target) keeps its
// interval, from the residual of every round.
TEST(RoundModel, ABackendOfFewerRoundsIsStillCompared) {
    std::vector<StepsByRound> backends = {{{1, {100}}, {2, {104}}, {3, {98}}, {4, {101}}},
                                          {{1, {150}}, {2, {158}}},
                                          {{1, {70}}, {2, {71}}, {3, {69}}, {4, {72}}}};
    const std::vector<Comparison> c = compare_over_rounds(backends, 0, streams(3));
    EXPECT_EQ(c[1].rounds, 2);
    EXPECT_TRUE(c[1].ratio_interval.known());
    EXPECT_GT(c[1].degrees_of_freedom, 1);
    EXPECT_LE(c[1].degrees_of_freedom, 10 - 3 - 3);  // at most the residual's
    EXPECT_TRUE(c[1].ratio_interval.contains(1.5));
}

// A simulated run: `backends` backends, 3 rounds of 2 steps each, with a level each round shares
// (a drift, a busy minute: sd `shared`), noise of each round's worker (sd `own[b]`), noise of
// each step (sd 0.01) and a share `disturbed` of the steps 30% longer.
struct Simulation {
    std::vector<double> own;
    double shared = 0.05;
    double disturbed = 0;
    int baseline_workers = 1;  // backend 0's workers a round
    std::mt19937_64 engine{7};

    std::vector<StepsByRound> run() {
        std::normal_distribution<double> normal(0, 1);
        std::uniform_real_distribution<double> uniform(0, 1);
        std::vector<StepsByRound> backends(own.size());
        for (int r = 1; r <= 3; ++r) {
            const double round = shared * normal(engine);
            for (size_t b = 0; b < own.size(); ++b)
                for (int w = 0; w < (b == 0 ? baseline_workers : 1); ++w) {
                    const double worker = round + own[b] * normal(engine);
                    std::vector<double> steps;
                    for (int i = 0; i < 2; ++i)
                        steps.push_back(100.0 * static_cast<double>(b + 1) *
                                        std::exp(worker + 0.01 * normal(engine)) *
                                        (uniform(engine) < disturbed ? 1.3 : 1.0));
                    backends[b].push_back({r, steps});
                }
        }
        return backends;
    }
};

struct Coverage {
    int truth = 0, next_run = 0, pairs = 0;
    double half_width = 0;  // the largest relative half-width seen
    std::vector<double> half_widths;

    double median_half_width() {
        std::nth_element(half_widths.begin(), half_widths.begin() + half_widths.size() / 2,
                         half_widths.end());
        return half_widths[half_widths.size() / 2];
    }
};

// Over `runs` simulated runs: how often backend b's interval holds its true ratio (b + 1), and
// the next run's ratio.
Coverage coverage(Simulation& s, size_t b, int runs) {
    Coverage c;
    std::vector<Comparison> previous;
    for (int i = 0; i < runs; ++i) {
        const std::vector<Comparison> now = compare_over_rounds(s.run(), 0, streams(s.own.size()));
        c.truth += now[b].ratio_interval.contains(static_cast<double>(b + 1));
        if (!previous.empty()) {
            ++c.pairs;
            c.next_run += previous[b].ratio_interval.contains(now[b].ratio);
        }
        c.half_width = std::max(c.half_width, harness::output::relative_half_width(now[b]));
        c.half_widths.push_back(harness::output::relative_half_width(now[b]));
        previous = now;
    }
    return c;
}

// Six backends of equal noise: the 95% interval holds the truth a little less than 95% of the
// time (each backend's variance has few degrees of freedom of its own) and the next run's ratio
// about 83% (P(|Z| < 1.96 / sqrt 2)), however large the rounds' shared level.
TEST(RoundModel, IsCalibratedOnRoundsWithSharedAndOwnNoise) {
    for (double shared : {0.0, 0.1}) {
        Simulation s{std::vector<double>(6, 0.02), shared};
        const int runs = 1000;
        const Coverage c = coverage(s, 3, runs);
        EXPECT_GT(c.truth, runs * 90 / 100) << "shared " << shared;
        EXPECT_LT(c.truth, runs * 97 / 100) << "shared " << shared;
        EXPECT_GT(c.next_run, c.pairs * 78 / 100) << "shared " << shared;
        EXPECT_LT(c.next_run, c.pairs * 90 / 100) << "shared " << shared;
    }
}

// Backends of unequal noise (one three times the others' sd): each backend's own variance,
// unbiased although the noisy one's noise reaches the others' residuals, drawn towards a common
// one as far as the backends' spread allows (Smyth's empirical Bayes), which with six backends
// of three rounds is not far: the noisy backend's interval holds the truth about 83% of the
// time, the quiet ones' about 94%, the figures docs/statistics.md gives.
TEST(RoundModel, UnequalNoiseCostsTheNoisyBackendCoverage) {
    Simulation s{{0.02, 0.02, 0.02, 0.02, 0.02, 0.06}, 0.05};
    const int runs = 1000;
    const Coverage noisy = coverage(s, 5, runs), quiet = coverage(s, 1, runs);
    EXPECT_GT(noisy.truth, runs * 80 / 100);
    EXPECT_LT(noisy.truth, runs * 90 / 100);
    EXPECT_GT(quiet.truth, runs * 90 / 100);
}

// Every ratio divides by the baseline, so a second baseline worker a round narrows every
// interval: its rounds' figure averages two workers, and the residual gains degrees of freedom.
// With six backends of equal noise the median half-width falls by more than a tenth (Dunnett's
// allocation would give the baseline sqrt(5) workers for one of each other backend), and the
// interval stays calibrated.
TEST(RoundModel, ASecondBaselineWorkerARoundNarrowsEveryIntervalAndKeepsItCalibrated) {
    const int runs = 1000;
    Simulation one{std::vector<double>(6, 0.02), 0.05};
    Simulation two{std::vector<double>(6, 0.02), 0.05};
    two.baseline_workers = 2;
    Coverage c1 = coverage(one, 3, runs), c2 = coverage(two, 3, runs);
    EXPECT_GT(c2.truth, runs * 90 / 100);
    EXPECT_LT(c2.truth, runs * 97 / 100);
    EXPECT_GT(c2.next_run, c2.pairs * 78 / 100);
    EXPECT_LT(c2.next_run, c2.pairs * 90 / 100);
    EXPECT_LT(c2.median_half_width(), 0.9 * c1.median_half_width())
        << c1.median_half_width() << " " << c2.median_half_width();
    // Each of its rounds is compared once, with the steps of both baseline workers.
    const std::vector<Comparison> now = compare_over_rounds(two.run(), 0, streams(6));
    EXPECT_EQ(now[3].rounds, 3);
}

}  // namespace
