#include "results/record.hpp"
#include "results/table.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace hr = harness::results;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(Stats, EmptySamplesAreAllZero) {
    const hr::Stats s = hr::compute_stats({}, 6, 1000);
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
    const hr::Stats s = hr::compute_stats({7.5}, 1, 0);
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
    const hr::Stats s = hr::compute_stats({5, 1, 3, 2, 4}, 1, 0);
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
    const hr::Stats s = hr::compute_stats({40, 10, 30, 20}, 1, 0);
    EXPECT_DOUBLE_EQ(s.median_ms, 25.0);
    EXPECT_DOUBLE_EQ(s.mean_ms, 25.0);
    EXPECT_DOUBLE_EQ(s.stddev_ms, std::sqrt(500.0 / 3.0));
    EXPECT_DOUBLE_EQ(s.p10_ms, 13.0);
    EXPECT_DOUBLE_EQ(s.p90_ms, 37.0);
    EXPECT_DOUBLE_EQ(s.iqr_ms, 32.5 - 17.5);
    EXPECT_DOUBLE_EQ(s.cv, std::sqrt(500.0 / 3.0) / 25.0);
}

TEST(Stats, ThroughputFromTheMedian) {
    const hr::Stats s = hr::compute_stats({100, 100, 100, 250}, 6, 200'000'000'000);
    EXPECT_DOUBLE_EQ(s.median_ms, 100.0);
    EXPECT_DOUBLE_EQ(s.images_per_s, 60.0);  // 6 images per 0.1 s
    EXPECT_DOUBLE_EQ(s.gflops, 2000.0);      // 200 GFLOP per 0.1 s
}

TEST(Stats, NoisyOnlyAboveTenPercent) {
    EXPECT_FALSE(hr::compute_stats({90, 95, 100, 105, 110}, 1, 0).noisy);  // IQR/median = 10%
    EXPECT_TRUE(hr::compute_stats({88, 94, 100, 106, 112}, 1, 0).noisy);   // 12%
}

TEST(Status, NamesRoundTrip) {
    for (hr::Status s :
         {hr::Status::ok, hr::Status::skipped, hr::Status::failed, hr::Status::crashed,
          hr::Status::timeout, hr::Status::oom, hr::Status::mismatch}) {
        EXPECT_EQ(hr::status_from_string(hr::to_string(s)), s);
    }
    EXPECT_STREQ(hr::to_string(hr::Status::oom), "oom");
    EXPECT_FALSE(hr::status_from_string("fine").has_value());
}

TEST(BackendRun, FirstAndLastLoss) {
    hr::BackendRun r;
    EXPECT_TRUE(std::isnan(r.first_loss()));
    EXPECT_TRUE(std::isnan(r.last_loss()));
    r.warmup_losses = {9, 8};
    EXPECT_EQ(r.first_loss(), 9);
    EXPECT_EQ(r.last_loss(), 8);
    r.losses = {7, 6, 5};
    EXPECT_EQ(r.first_loss(), 9);
    EXPECT_EQ(r.last_loss(), 5);
    r.warmup_losses.clear();
    EXPECT_EQ(r.first_loss(), 7);
}

hr::BackendRun ok_run(const std::string& name, std::vector<double> samples) {
    hr::BackendRun r;
    r.backend = name;
    r.device = "cpu";
    r.status = hr::Status::ok;
    r.batch = 6;
    r.flops_per_step = 1'000'000'000;
    r.samples_ms = std::move(samples);
    r.losses = {2.5, 2.25};
    r.stats = hr::compute_stats(r.samples_ms, r.batch, r.flops_per_step);
    return r;
}

TEST(Table, ListsEveryBackendAndWhyOneDidNotRun) {
    hr::BackendRun skipped;
    skipped.backend = "libtorch-cuda";
    skipped.device = "cuda:0";
    skipped.status = hr::Status::skipped;
    skipped.message = "no CUDA device";

    const std::string t = hr::format_table({ok_run("reference", {10, 10, 10}), skipped});
    EXPECT_NE(t.find("median ms"), std::string::npos);
    EXPECT_NE(t.find("reference"), std::string::npos);
    EXPECT_NE(t.find("10.000"), std::string::npos);
    EXPECT_NE(t.find("600.0"), std::string::npos);  // images/s
    EXPECT_NE(t.find("libtorch-cuda: skipped \u2014 no CUDA device"), std::string::npos) << t;
    EXPECT_EQ(t.find("reference: "), std::string::npos) << t;
}

TEST(Table, FlagsNoiseAndNonFiniteLoss) {
    hr::BackendRun noisy = ok_run("onednn", {88, 94, 100, 106, 112});
    hr::BackendRun diverged = ok_run("cudnn", {5, 5, 5});
    diverged.losses = {1.0, kInf, kNaN};
    diverged.nonfinite_loss = true;

    const std::string t = hr::format_table({noisy, diverged});
    EXPECT_NE(t.find("onednn: noisy, IQR/median 12%"), std::string::npos) << t;
    EXPECT_NE(t.find("cudnn: non-finite loss"), std::string::npos) << t;
    EXPECT_NE(t.find("nan"), std::string::npos) << t;
}

TEST(Table, ColumnsAreAligned) {
    const std::string t =
        hr::format_table({ok_run("a", {1, 1}), ok_run("a-much-longer-name", {1234.5, 1234.5})});
    std::vector<std::string> lines;
    size_t start = 0;
    for (size_t nl = t.find('\n'); nl != std::string::npos; nl = t.find('\n', start)) {
        lines.push_back(t.substr(start, nl - start));
        start = nl + 1;
    }
    ASSERT_GE(lines.size(), 4u);
    const size_t col = lines[0].find("device");
    for (size_t i = 2; i < 4; ++i) EXPECT_EQ(lines[i].find("cpu"), col) << t;
    for (size_t i = 1; i < 4; ++i) EXPECT_EQ(lines[i].size(), lines[0].size()) << t;
}

}  // namespace
