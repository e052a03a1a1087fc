#include "output/csv_row.hpp"
#include "output/scaling.hpp"
#include "parallel/buckets.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace hp = harness::parallel;

TEST(PlanBuckets, ConsecutiveBuffersUpToTheCap) {
    // 4-byte floats: a cap of 40 bytes is 10 elements.
    const auto buckets = hp::plan_buckets({4, 4, 3, 12, 1, 1}, 40);
    ASSERT_EQ(buckets.size(), 4u);
    EXPECT_EQ(buckets[0].first, 0);
    EXPECT_EQ(buckets[0].count, 2);
    EXPECT_EQ(buckets[0].elements, 8);
    EXPECT_EQ(buckets[1].first, 2);  // 8 + 3 > 10
    EXPECT_EQ(buckets[1].count, 1);
    EXPECT_EQ(buckets[2].first, 3);  // larger than the cap: a bucket of its own
    EXPECT_EQ(buckets[2].elements, 12);
    EXPECT_EQ(buckets[3].first, 4);
    EXPECT_EQ(buckets[3].count, 2);
}

TEST(PlanBuckets, EveryBufferInExactlyOneBucket) {
    const std::vector<int64_t> elements = {7, 1, 1, 300, 2, 9, 9, 9, 40};
    for (int64_t cap : {4, 40, 400, 4000}) {
        int next = 0;
        int64_t total = 0;
        for (const hp::Bucket& b : hp::plan_buckets(elements, cap)) {
            EXPECT_EQ(b.first, next);
            EXPECT_GT(b.count, 0);
            next += b.count;
            total += b.elements;
        }
        EXPECT_EQ(next, static_cast<int>(elements.size()));
        EXPECT_EQ(total, 378);
    }
    EXPECT_EQ(hp::plan_buckets(elements, 1 << 30).size(), 1u);
}

TEST(BucketTracker, ABucketIsCompleteWhenItsLastBufferIsReady) {
    hp::BucketTracker tracker(hp::plan_buckets({2, 2, 2, 2}, 16));  // two buckets of two
    EXPECT_EQ(tracker.ready(1), -1);
    EXPECT_EQ(tracker.ready(0), 0);
    EXPECT_EQ(tracker.ready(3), -1);
    EXPECT_EQ(tracker.incomplete(), std::vector<int>{1});
    EXPECT_EQ(tracker.ready(2), 1);
    EXPECT_TRUE(tracker.incomplete().empty());
    tracker.start_step();
    EXPECT_EQ(tracker.incomplete(), (std::vector<int>{0, 1}));
    EXPECT_EQ(tracker.ready(0), -1);
}

TEST(BucketTracker, RefusesABufferTwiceOrOutOfRange) {
    hp::BucketTracker tracker(hp::plan_buckets({2, 2}, 16));
    tracker.ready(0);
    EXPECT_THROW(tracker.ready(0), std::runtime_error);
    EXPECT_THROW(tracker.ready(2), std::runtime_error);
    EXPECT_THROW(tracker.ready(-1), std::runtime_error);
}

namespace {

harness::output::BackendRun parallel_row(const std::string& backend, int ranks, double median_ms,
                                         bool oversubscribed = false) {
    harness::output::BackendRun r;
    r.backend = backend;
    r.status = harness::output::Status::ok;
    r.stats.median_ms = median_ms;
    r.parallel.emplace();
    r.parallel->ranks = ranks;
    r.parallel->oversubscribed = oversubscribed;
    return r;
}

}  // namespace

TEST(ScalingEfficiency, AgainstTheSameBackendAtOneRank) {
    std::vector<harness::output::BackendRun> runs = {
        parallel_row("a", 1, 100), parallel_row("a", 2, 125), parallel_row("b", 2, 50)};
    harness::output::fill_scaling_efficiency(runs);
    EXPECT_DOUBLE_EQ(runs[0].parallel->scaling_efficiency, 1.0);
    EXPECT_DOUBLE_EQ(runs[1].parallel->scaling_efficiency, 0.8);
    EXPECT_TRUE(std::isnan(runs[2].parallel->scaling_efficiency));  // no one-rank row of b
}

TEST(ScalingEfficiency, NoneForOversubscribedOrUnfinishedRows) {
    std::vector<harness::output::BackendRun> runs = {
        parallel_row("a", 1, 100), parallel_row("a", 2, 125, true), parallel_row("a", 4, 150)};
    runs[2].status = harness::output::Status::failed;
    harness::output::fill_scaling_efficiency(runs);
    EXPECT_TRUE(std::isnan(runs[1].parallel->scaling_efficiency));
    EXPECT_TRUE(std::isnan(runs[2].parallel->scaling_efficiency));
}

TEST(RowName, ADataParallelRowIsNamedWithItsRanks) {
    EXPECT_EQ(harness::output::row_name("onednn", 0), "onednn");
    EXPECT_EQ(harness::output::row_name("onednn", 1), "onednn (1 rank)");
    EXPECT_EQ(
        harness::output::row_name(harness::output::CsvRow{{"backend", "onednn"}, {"ranks", "2"}}),
        "onednn (2 ranks)");
    EXPECT_EQ(
        harness::output::row_name(harness::output::CsvRow{{"backend", "onednn"}, {"ranks", ""}}),
        "onednn");
    harness::output::BackendRun run = parallel_row("libtorch-cpu", 4, 1);
    EXPECT_EQ(run.name(), "libtorch-cpu (4 ranks)");
    run.parallel.reset();
    EXPECT_EQ(run.name(), "libtorch-cpu");
}
