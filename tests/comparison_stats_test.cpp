// The comparisons' statistics (docs/statistics.md) against cases with known answers: the
// Mann-Whitney U test against SciPy 1.17's scipy.stats.mannwhitneyu and against an enumeration of
// every ordering; the bootstrap interval against ratios known by construction.
#include "output/comparison_stats.hpp"
#include "results_samples.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bitset>
#include <cmath>
#include <random>
#include <vector>

namespace {

using harness::testing::evenly_spread;
using Method = harness::output::MannWhitneyMethod;

// SciPy's documentation example (Mann and Whitney 1947): mannwhitneyu(males, females) gives
// U = 17 and, exactly, p = 1/9.
const std::vector<double> kMales = {19, 22, 16, 29, 24}, kFemales = {20, 11, 17, 12};

TEST(MannWhitney, SmallSamplesWithoutTiesAreExactAsInScipy) {
    const harness::output::MannWhitney r = harness::output::mann_whitney_u(kMales, kFemales);
    EXPECT_TRUE(r.exact);
    EXPECT_EQ(r.u, 17);
    EXPECT_NEAR(r.p, 1.0 / 9, 1e-15);
    // U is of the first sample: swapped, U = 5 * 4 - 17 and the same two-sided p.
    const harness::output::MannWhitney swapped = harness::output::mann_whitney_u(kFemales, kMales);
    EXPECT_EQ(swapped.u, 3);
    EXPECT_NEAR(swapped.p, 1.0 / 9, 1e-15);
}

TEST(MannWhitney, NormalApproximationMatchesScipyAsymptotic) {
    // mannwhitneyu(males, females, method="asymptotic").pvalue
    const harness::output::MannWhitney r =
        harness::output::mann_whitney_u(kMales, kFemales, Method::normal);
    EXPECT_FALSE(r.exact);
    EXPECT_NEAR(r.p, 0.11134688653314041, 1e-12);
}

TEST(MannWhitney, TiesUseMidranksAndTheTieCorrection) {
    const std::vector<double> x = {1, 2, 2, 3, 4, 5, 5, 6}, y = {3, 4, 4, 6, 7, 8, 8, 9, 10};
    // Ties: the automatic method is the normal approximation, as SciPy's "auto".
    const harness::output::MannWhitney r = harness::output::mann_whitney_u(x, y);
    EXPECT_FALSE(r.exact);
    EXPECT_EQ(r.u, 12);
    EXPECT_NEAR(r.p, 0.022974224429824126, 1e-12);
    // method="exact" ignores the ties, as SciPy does.
    EXPECT_NEAR(harness::output::mann_whitney_u(x, y, Method::exact).p, 0.02064993829699712, 1e-12);
}

TEST(MannWhitney, UpToTwentyValuesWithoutTiesAreExact) {
    const std::vector<double> x = {12.1, 14.3, 9.8,  15.2, 11.7, 13.9, 10.4, 16.8,
                                   12.9, 14.7, 11.2, 13.1, 15.9, 10.9, 12.5};
    const std::vector<double> y = {13.6, 15.5, 14.1, 17.2, 16.1, 12.3,
                                   18.4, 15.1, 16.6, 14.9, 17.7, 13.3};
    // SciPy's "auto" is exact only when a sample has 8 values or fewer; here both methods are
    // compared with theirs.
    const harness::output::MannWhitney r = harness::output::mann_whitney_u(x, y);
    EXPECT_TRUE(r.exact);
    EXPECT_EQ(r.u, 36);
    EXPECT_NEAR(r.p, 0.007404224378245108, 1e-14);
    EXPECT_NEAR(harness::output::mann_whitney_u(x, y, Method::normal).p, 0.009040133006019455,
                1e-12);
}

TEST(MannWhitney, LargerSamplesWithTiesMatchScipy) {
    // numpy.random.default_rng(7): normal(10, 1, 30) and normal(10.8, 1, 25), rounded to 0.01
    // (so 10.11, 9.99 and 10.16 are tied).
    const std::vector<double> x = {10.0,  10.3, 9.73,  9.11,  9.55,  9.01, 10.06, 11.34,
                                   9.51,  9.38, 10.49, 10.36, 10.11, 9.07, 9.97,  10.7,
                                   8.66,  9.54, 8.1,   8.71,  8.16,  9.76, 8.73,  10.27,
                                   10.16, 9.81, 7.48,  9.46,  9.95,  10.11};
    const std::vector<double> y = {9.27,  10.32, 9.82,  9.99, 11.86, 9.99,  10.77, 11.68, 10.22,
                                   10.69, 10.91, 10.86, 9.57, 10.88, 12.16, 9.25,  11.66, 10.92,
                                   10.16, 12.8,  11.56, 9.6,  10.87, 11.38, 10.61};
    const harness::output::MannWhitney r = harness::output::mann_whitney_u(x, y);
    EXPECT_FALSE(r.exact);
    EXPECT_EQ(r.u, 135.5);
    EXPECT_NEAR(r.p, 5.343844915194635e-05, 1e-15);
}

// The exact p by brute force: every way of choosing which 5 of the 11 pooled ranks are x's.
TEST(MannWhitney, ExactPIsTheShareOfOrderingsAtLeastAsExtreme) {
    const std::vector<double> x = {1.5, 3.5, 4.5, 7.5, 10.5};
    const std::vector<double> y = {2.5, 5.5, 6.5, 8.5, 9.5, 11.5};
    const harness::output::MannWhitney r = harness::output::mann_whitney_u(x, y);
    ASSERT_TRUE(r.exact);
    const double u_min = std::min(r.u, 30 - r.u);
    int extreme = 0, total = 0;
    for (unsigned mask = 0; mask < (1u << 11); ++mask) {
        if (std::bitset<11>(mask).count() != 5) continue;
        int u = 0;  // pairs (x, y) with x above y: for each x at rank i, the y's below it
        for (int i = 0, ys_below = 0; i < 11; ++i) {
            if (mask & (1u << i))
                u += ys_below;
            else
                ++ys_below;
        }
        ++total;
        if (std::min(u, 30 - u) <= u_min) ++extreme;
    }
    EXPECT_EQ(total, 462);  // C(11, 5)
    EXPECT_NEAR(r.p, static_cast<double>(extreme) / total, 1e-15);
}

TEST(MannWhitney, IdenticalSamplesGiveOneAndEmptyOnesNothing) {
    const std::vector<double> x = {3, 1, 4, 1.5, 9, 2.6};
    EXPECT_EQ(harness::output::mann_whitney_u(x, x).p, 1);
    EXPECT_EQ(harness::output::mann_whitney_u({5, 5, 5}, {5, 5}).p, 1);  // every value tied
    EXPECT_TRUE(std::isnan(harness::output::mann_whitney_u({}, x).p));
}

TEST(Bootstrap, WellSeparatedSamplesGiveAnIntervalAroundTheTrueRatio) {
    // Shuffled so that the order of the steps carries nothing.
    std::vector<double> slow = evenly_spread(150, 5, 21), fast = evenly_spread(100, 4, 21);
    std::reverse(slow.begin(), slow.end());
    std::rotate(fast.begin(), fast.begin() + 7, fast.end());
    const harness::output::Comparison c = harness::output::compare({{slow, fast}}, "separated");
    EXPECT_EQ(c.rounds, 1);
    EXPECT_DOUBLE_EQ(c.ratio, 1.5);  // the medians are 150 and 100
    EXPECT_TRUE(c.ratio_interval.contains(1.5));
    EXPECT_GT(c.ratio_interval.lo, 1.4);
    EXPECT_LT(c.ratio_interval.hi, 1.6);
    EXPECT_TRUE(c.significant());
    EXPECT_DOUBLE_EQ(c.difference_ms, 50);
    EXPECT_TRUE(c.difference_interval.contains(50));
    EXPECT_GT(c.difference_interval.lo, 0);
    EXPECT_LT(c.p, 1e-6);
    EXPECT_EQ(c.log_ratio_resamples.size(), harness::output::kBootstrapResamples);
}

TEST(Bootstrap, TheSameStreamGivesTheSameBounds) {
    const std::vector<double> a = {10.2, 9.7, 11.5, 10.9, 9.1, 10.4, 12.3, 10.0, 9.8, 10.6};
    const std::vector<double> b = {8.1, 8.9, 7.7, 9.4, 8.4, 8.0, 8.8, 9.9, 8.3, 8.6};
    const harness::output::Comparison first =
        harness::output::compare({{a, b}}, "hourglass2 x vs y");
    const harness::output::Comparison again =
        harness::output::compare({{a, b}}, "hourglass2 x vs y");
    EXPECT_EQ(first.ratio_interval.lo, again.ratio_interval.lo);
    EXPECT_EQ(first.ratio_interval.hi, again.ratio_interval.hi);
    EXPECT_EQ(first.log_ratio_resamples, again.log_ratio_resamples);
    // Pinned: the seed, the generator, the order of the draws and their mapping to indices fix
    // these on every machine (a change to any of them changes them).
    EXPECT_NEAR(first.ratio_interval.lo, 1.1186440677966101, 1e-12);
    EXPECT_NEAR(first.ratio_interval.hi, 1.3154761904761905, 1e-12);
    // Another stream draws otherwise.
    const harness::output::Comparison other =
        harness::output::compare({{a, b}}, "hourglass8 x vs y");
    EXPECT_NE(first.log_ratio_resamples, other.log_ratio_resamples);
    EXPECT_EQ(first.ratio, other.ratio);
}

TEST(Bootstrap, SamplesFromOneDistributionShowNoSignificantDifference) {
    const std::vector<double> a = {10.2, 9.7, 11.5, 10.9, 9.1, 10.4, 12.3, 10.0, 9.8, 10.6};
    const harness::output::Comparison same = harness::output::compare({{a, a}}, "same");
    EXPECT_DOUBLE_EQ(same.ratio, 1);
    EXPECT_TRUE(same.ratio_interval.contains(1));
    EXPECT_TRUE(same.difference_interval.contains(0));
    EXPECT_FALSE(same.significant());
    EXPECT_EQ(same.p, 1);
    // Two samples of one distribution: the even and the odd steps of one run.
    std::vector<double> even, odd;
    const std::vector<double> run = evenly_spread(20, 2, 40);
    for (size_t i = 0; i < run.size(); ++i) (i % 2 ? odd : even).push_back(run[i]);
    const harness::output::Comparison halves = harness::output::compare({{even, odd}}, "halves");
    EXPECT_FALSE(halves.significant());
    EXPECT_GT(halves.p, 0.5);
}

// Coverage: over 200 pairs of samples drawn from two distributions whose medians are 150 and 100,
// the 95% interval should hold 1.5 about 95% of the time. The samples are drawn with explicit
// arithmetic, so the count is the same on every machine (193 of 200).
TEST(Bootstrap, IntervalsHoldTheTrueRatioAboutNinetyFivePercentOfTheTime) {
    std::mt19937_64 engine(42);
    const auto uniform = [&engine](double lo, double hi) {
        return lo + (hi - lo) * static_cast<double>(engine() >> 11) * 0x1p-53;
    };
    int holding = 0;
    const int trials = 200;
    for (int t = 0; t < trials; ++t) {
        std::vector<double> slow, fast;
        for (int i = 0; i < 25; ++i) slow.push_back(uniform(135, 165));
        for (int i = 0; i < 25; ++i) fast.push_back(uniform(80, 120));
        const harness::output::Comparison c =
            harness::output::compare({{slow, fast}}, "coverage " + std::to_string(t));
        holding += c.ratio_interval.contains(1.5);
        EXPECT_TRUE(c.significant());
    }
    EXPECT_GE(holding, 180) << holding << " of " << trials;
    EXPECT_LE(holding, 199) << holding << " of " << trials;
}

TEST(Bootstrap, ConstantStepsGiveTheRatioWithNoSpread) {
    const harness::output::Comparison c =
        harness::output::compare({{{3, 3, 3}, {2, 2, 2, 2}}}, "constant");
    EXPECT_DOUBLE_EQ(c.ratio, 1.5);
    EXPECT_DOUBLE_EQ(c.ratio_interval.lo, 1.5);
    EXPECT_DOUBLE_EQ(c.ratio_interval.hi, 1.5);
    EXPECT_DOUBLE_EQ(c.difference_ms, 1);
    EXPECT_DOUBLE_EQ(c.difference_interval.lo, 1);
    EXPECT_DOUBLE_EQ(c.difference_interval.hi, 1);
}

TEST(Bootstrap, TheMedianOfAnEvenCountIsTheMidpoint) {
    EXPECT_DOUBLE_EQ(harness::output::compare({{{1, 4, 2, 3}, {2, 2}}}, "even").ratio, 1.25);
}

TEST(Bootstrap, OneStepGivesARatioButNoInterval) {
    const harness::output::Comparison c = harness::output::compare({{{6}, {4, 4, 4}}}, "one step");
    EXPECT_DOUBLE_EQ(c.ratio, 1.5);
    EXPECT_FALSE(c.ratio_interval.known());
    EXPECT_FALSE(c.significant());
    EXPECT_TRUE(c.log_ratio_resamples.empty());
}

TEST(Bootstrap, StepsThatAreNotPositiveNumbersAreLeftOut) {
    const harness::output::Comparison c = harness::output::compare(
        {{{3, NAN, 3, 0, 3}, {2, 2, -1, INFINITY}}, {{}, {2, 2}}, {{3}, {}}}, "filtered");
    EXPECT_EQ(c.rounds, 1);
    EXPECT_DOUBLE_EQ(c.ratio, 1.5);
    EXPECT_EQ(harness::output::compare({{{}, {2}}}, "nothing").rounds, 0);
}

// Three rounds whose steps are constant: each round's ratio is known (1.2, 1.5, 1.8), the ratio is
// their geometric mean, and the interval comes from drawing rounds alone. All three drawn rounds
// are the 1.2 round with probability 1/27 > 2.5%, so the lower bound is 1.2, and the upper 1.8.
// Student's t quantiles as tables give them (R's qt(0.975, df), ten digits).
TEST(StudentT, QuantilesMatchTheTables) {
    using harness::output::student_t_quantile;
    EXPECT_NEAR(student_t_quantile(0.975, 1), 12.70620474, 1e-6);
    EXPECT_NEAR(student_t_quantile(0.975, 2), 4.302652730, 1e-7);
    EXPECT_NEAR(student_t_quantile(0.975, 3), 3.182446305, 1e-7);
    EXPECT_NEAR(student_t_quantile(0.975, 9), 2.262157163, 1e-7);
    EXPECT_NEAR(student_t_quantile(0.975, 30), 2.042272456, 1e-7);
    EXPECT_NEAR(student_t_quantile(0.975, 1e9), 1.959963985, 1e-7);
    EXPECT_NEAR(student_t_quantile(0.025, 3), -3.182446305, 1e-7);
    EXPECT_NEAR(student_t_quantile(0.9, 5), 1.475884049, 1e-7);
}

// Over several rounds the interval is Student's t over the rounds' log ratios of medians:
// 1.2, 1.5 and 1.8 give exp(mean ± t(0.975, 2) sd / sqrt 3) of their logarithms.
TEST(Rounds, GiveStudentsIntervalOverTheRoundsRatios) {
    const std::vector<harness::output::Round> rounds = {
        {{12, 12, 12}, {10, 10, 10}}, {{15, 15, 15}, {10, 10}}, {{36, 36}, {20, 20, 20}}};
    const harness::output::Comparison c = harness::output::compare(rounds, "rounds");
    EXPECT_EQ(c.rounds, 3);
    EXPECT_NEAR(c.ratio, std::cbrt(1.2 * 1.5 * 1.8), 1e-12);
    auto interval = [](std::vector<double> v) {
        const double mean = (v[0] + v[1] + v[2]) / 3;
        double squares = 0;
        for (double x : v) squares += (x - mean) * (x - mean);
        const double half = 4.302652730 * std::sqrt(squares / 2 / 3);
        return std::pair{mean - half, mean + half};
    };
    const auto [lo, hi] = interval({std::log(1.2), std::log(1.5), std::log(1.8)});
    EXPECT_NEAR(c.ratio_interval.lo, std::exp(lo), 1e-7);
    EXPECT_NEAR(c.ratio_interval.hi, std::exp(hi), 1e-7);
    EXPECT_NEAR(c.log_standard_error, (hi - lo) / 2 / 4.302652730, 1e-9);
    EXPECT_NEAR(c.difference_ms, (2 + 5 + 16) / 3.0, 1e-12);
    const auto [dlo, dhi] = interval({2, 5, 16});
    EXPECT_NEAR(c.difference_interval.lo, dlo, 1e-6);
    EXPECT_NEAR(c.difference_interval.hi, dhi, 1e-6);
    // Three rounds that disagree this much leave 1 possible.
    EXPECT_FALSE(c.significant());
    EXPECT_TRUE(c.log_ratio_resamples.empty());
}

// Another run's estimate falls inside one run's interval about as often as a calibrated interval
// allows (about 83%, a little more for t's small-sample widths), where the spread between rounds
// is larger than within them: the case the percentile bootstrap over three rounds got wrong.
TEST(Rounds, AnotherRunsEstimateFallsInsideTheIntervalAsOftenAsCalibrated) {
    std::mt19937_64 engine(2024);
    std::normal_distribution<double> normal(0, 1);
    auto run = [&] {
        std::vector<harness::output::Round> rounds(3);
        for (auto& r : rounds) {
            const double offset = 0.03 * normal(engine);
            for (int i = 0; i < 5; ++i) {
                r.ms.push_back(130 * std::exp(offset + 0.02 * normal(engine)));
                r.baseline_ms.push_back(100 * std::exp(0.02 * normal(engine)));
            }
        }
        return rounds;
    };
    int inside = 0;
    constexpr int kPairs = 400;
    for (int i = 0; i < kPairs; ++i) {
        const auto one = harness::output::compare(run(), "one");
        inside += one.ratio_interval.contains(harness::output::compare(run(), "other").ratio);
    }
    EXPECT_GT(inside, kPairs * 80 / 100);
    EXPECT_LT(inside, kPairs * 97 / 100);
}

// Rounds on a machine whose speed drifts: the run is 1.5 times the baseline in every round, so
// each round's ratio, and their geometric mean, is 1.5 although the rounds' medians differ.
TEST(Bootstrap, RoundsCompareEachRunWithTheBaselineOfItsRound) {
    std::vector<harness::output::Round> rounds;
    for (double scale : {1.0, 1.3, 0.8}) {
        harness::output::Round r;
        for (double v : evenly_spread(100, 6, 15)) r.baseline_ms.push_back(scale * v);
        for (double v : evenly_spread(150, 9, 15)) r.ms.push_back(scale * v);
        rounds.push_back(r);
    }
    const harness::output::Comparison c = harness::output::compare(rounds, "drift");
    EXPECT_NEAR(c.ratio, 1.5, 1e-12);
    EXPECT_NEAR(c.ratio_interval.lo, 1.5, 1e-9);
    EXPECT_NEAR(c.ratio_interval.hi, 1.5, 1e-9);
}

TEST(GeometricMean, OfKnownRatios) {
    const harness::output::Comparison two = harness::output::compare({{{4, 4}, {2, 2}}}, "a"),
                                      eight = harness::output::compare({{{8, 8, 8}, {1, 1}}}, "b"),
                                      half = harness::output::compare({{{1, 1}, {2, 2}}}, "c");
    harness::output::GeometricMean g = harness::output::geometric_mean({&two, &eight});
    EXPECT_EQ(g.comparisons, 2);
    EXPECT_DOUBLE_EQ(g.ratio, 4);
    EXPECT_DOUBLE_EQ(g.ratio_interval.lo, 4);
    EXPECT_DOUBLE_EQ(g.ratio_interval.hi, 4);
    EXPECT_TRUE(g.significant());
    g = harness::output::geometric_mean({&two, &half});
    EXPECT_DOUBLE_EQ(g.ratio, 1);
    EXPECT_FALSE(g.significant());
    EXPECT_NEAR(harness::output::geometric_mean({&two, &eight, &half}).ratio, 2,
                1e-15);  // cbrt(2 * 8 / 2)
}

TEST(GeometricMean, ItsIntervalCombinesTheConfigsResamples) {
    // Two configs, the run 1.5 and 1.2 times the baseline: the geometric mean is sqrt(1.8).
    const harness::output::Comparison a = harness::output::compare(
                                          {{evenly_spread(150, 9, 15), evenly_spread(100, 6, 15)}},
                                          "a"),
                                      b = harness::output::compare(
                                          {{evenly_spread(120, 6, 15), evenly_spread(100, 5, 15)}},
                                          "b");
    const harness::output::GeometricMean g = harness::output::geometric_mean({&a, &b});
    EXPECT_NEAR(g.ratio, std::sqrt(1.8), 1e-12);
    EXPECT_TRUE(g.ratio_interval.contains(std::sqrt(1.8)));
    // Averaging two independent log ratios narrows the interval below the wider of the two.
    EXPECT_LT(std::log(g.ratio_interval.hi / g.ratio_interval.lo),
              std::max(std::log(a.ratio_interval.hi / a.ratio_interval.lo),
                       std::log(b.ratio_interval.hi / b.ratio_interval.lo)));
    // A comparison without resamples leaves the mean without an interval.
    const harness::output::Comparison one_step = harness::output::compare({{{6}, {4}}}, "one step");
    EXPECT_FALSE(harness::output::geometric_mean({&a, &one_step}).ratio_interval.known());
    EXPECT_EQ(harness::output::geometric_mean({}).comparisons, 0);
}

// Configs of several rounds: Student's t with the Welch-Satterthwaite degrees of freedom.
TEST(GeometricMean, OverRoundsCombinesTheConfigsStandardErrors) {
    const harness::output::Comparison a = harness::output::compare(
        {{{12}, {10}}, {{13}, {10}}, {{14}, {10}}}, "a"),
                                      b = harness::output::compare(
                                          {{{20}, {10}}, {{22}, {10}}, {{21}, {10}}, {{19}, {10}}},
                                          "b");
    const harness::output::GeometricMean g = harness::output::geometric_mean({&a, &b});
    EXPECT_NEAR(g.ratio, std::sqrt(a.ratio * b.ratio), 1e-12);
    const double va = a.log_standard_error * a.log_standard_error,
                 vb = b.log_standard_error * b.log_standard_error;
    const double df = (va + vb) * (va + vb) / (va * va / 2 + vb * vb / 3);
    const double half = harness::output::student_t_quantile(0.975, df) * std::sqrt(va + vb) / 2;
    EXPECT_NEAR(g.ratio_interval.lo, g.ratio * std::exp(-half), 1e-9);
    EXPECT_NEAR(g.ratio_interval.hi, g.ratio * std::exp(half), 1e-9);
}

}  // namespace
