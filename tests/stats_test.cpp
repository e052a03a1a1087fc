#include "output/record.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace {

TEST(Stats, EmptySamplesAreAllZero) {
    const harness::output::Stats s = harness::output::compute_stats({}, 6, 1000);
    EXPECT_EQ(s.median_ms, 0);
    EXPECT_EQ(s.mean_ms, 0);
    EXPECT_EQ(s.stddev_ms, 0);
    EXPECT_EQ(s.iqr_ms, 0);
    EXPECT_EQ(s.cv, 0);
    EXPECT_EQ(s.images_per_s, 0);
    EXPECT_EQ(s.gflops, 0);
    EXPECT_FALSE(s.noisy);
}

TEST(Stats, SingleSampleHasZeroSpread) {
    const harness::output::Stats s = harness::output::compute_stats({7.5}, 1, 0);
    EXPECT_DOUBLE_EQ(s.median_ms, 7.5);
    EXPECT_DOUBLE_EQ(s.min_ms, 7.5);
    EXPECT_DOUBLE_EQ(s.max_ms, 7.5);
    EXPECT_DOUBLE_EQ(s.p10_ms, 7.5);
    EXPECT_DOUBLE_EQ(s.p90_ms, 7.5);
    EXPECT_EQ(s.stddev_ms, 0);
    EXPECT_EQ(s.iqr_ms, 0);
    EXPECT_FALSE(s.noisy);
}

// numpy.percentile([5, 1, 3, 2, 4], q) with the default method: index (n-1)q = 4q.
TEST(Stats, OddCountMatchesNumpyType7) {
    const harness::output::Stats s = harness::output::compute_stats({5, 1, 3, 2, 4}, 1, 0);
    EXPECT_DOUBLE_EQ(s.median_ms, 3.0);
    EXPECT_DOUBLE_EQ(s.mean_ms, 3.0);
    EXPECT_DOUBLE_EQ(s.stddev_ms, std::sqrt(10.0 / 4.0));
    EXPECT_DOUBLE_EQ(s.min_ms, 1.0);
    EXPECT_DOUBLE_EQ(s.max_ms, 5.0);
    EXPECT_DOUBLE_EQ(s.p10_ms, 1.4);  // index 0.4
    EXPECT_DOUBLE_EQ(s.p90_ms, 4.6);  // index 3.6
    EXPECT_DOUBLE_EQ(s.iqr_ms, 2.0);  // 4 - 2
    EXPECT_DOUBLE_EQ(s.cv, std::sqrt(2.5) / 3.0);
    EXPECT_TRUE(s.noisy);  // 2 / 3
}

// Index (n-1)q = 3q: median at 1.5, p10 at 0.3, p25 at 0.75, p75 at 2.25, p90 at 2.7.
TEST(Stats, EvenCountInterpolates) {
    const harness::output::Stats s = harness::output::compute_stats({40, 10, 30, 20}, 1, 0);
    EXPECT_DOUBLE_EQ(s.median_ms, 25.0);
    EXPECT_DOUBLE_EQ(s.mean_ms, 25.0);
    EXPECT_DOUBLE_EQ(s.stddev_ms, std::sqrt(500.0 / 3.0));
    EXPECT_DOUBLE_EQ(s.p10_ms, 13.0);
    EXPECT_DOUBLE_EQ(s.p90_ms, 37.0);
    EXPECT_DOUBLE_EQ(s.iqr_ms, 32.5 - 17.5);
    EXPECT_DOUBLE_EQ(s.cv, std::sqrt(500.0 / 3.0) / 25.0);
}

TEST(Stats, ThroughputFromTheMedian) {
    const harness::output::Stats s =
        harness::output::compute_stats({100, 100, 100, 250}, 6, 200'000'000'000);
    EXPECT_DOUBLE_EQ(s.median_ms, 100.0);
    EXPECT_DOUBLE_EQ(s.images_per_s, 60.0);  // 6 images per 0.1 s
    EXPECT_DOUBLE_EQ(s.gflops, 2000.0);      // 200 GFLOP per 0.1 s
}

TEST(Stats, NoisyOnlyAboveTenPercent) {
    EXPECT_FALSE(
        harness::output::compute_stats({90, 95, 100, 105, 110}, 1, 0).noisy);  // IQR/median = 10%
    EXPECT_TRUE(harness::output::compute_stats({88, 94, 100, 106, 112}, 1, 0).noisy);  // 12%
}

}  // namespace
