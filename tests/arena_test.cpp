// The SDK's arena planner (include/hb/arena.hpp): buffers share memory only when their lifetimes
// are disjoint, at aligned offsets, in an arena no larger than it need be.
#include "hb/arena.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

namespace {

TEST(Arena, ReusesMemoryOfDeadBuffers) {
    const std::vector<hb::BufferRequest> r = {
        {1000, 0, 1, "a"}, {1000, 2, 3, "b"}, {100, 1, 2, "c"}, {10, 0, 3, "d"}};
    const hb::ArenaPlan plan = hb::plan_arena(r, 256);
    EXPECT_EQ(hb::find_conflict(r, plan), std::make_pair(-1, -1));
    EXPECT_EQ(plan.offsets[0], plan.offsets[1]);  // a and b are never live together
    for (int64_t o : plan.offsets) EXPECT_EQ(o % 256, 0);
    EXPECT_EQ(plan.bytes, 1024 + 256 + 256);
    EXPECT_EQ(plan.requested_bytes, 2110);
    EXPECT_EQ(plan.unshared_bytes, 1024 + 1024 + 256 + 256);
}

TEST(Arena, RandomRequestsNeverOverlapWhileLive) {
    std::mt19937 rng(7);
    for (int round = 0; round < 20; ++round) {
        std::vector<hb::BufferRequest> r;
        for (int i = 0; i < 200; ++i) {
            const int first = int(rng() % 100);
            r.push_back({int64_t(rng() % 100000), first, first + int(rng() % 30), "r"});
        }
        const hb::ArenaPlan plan = hb::plan_arena(r, 256);
        ASSERT_EQ(hb::find_conflict(r, plan), std::make_pair(-1, -1));
        int64_t peak_live = 0;
        for (int t = 0; t < 130; ++t) {
            int64_t live = 0;
            for (const auto& q : r)
                if (q.first <= t && t <= q.last) live += q.bytes;
            peak_live = std::max(peak_live, live);
        }
        EXPECT_GE(plan.bytes, peak_live);
        EXPECT_LE(plan.bytes, plan.unshared_bytes);
    }
}

TEST(Arena, SmallAlignmentAndMalformedRequests) {
    const std::vector<hb::BufferRequest> r = {{1000, 0, 2, ""}, {500, 3, 5, ""},  {800, 1, 4, ""},
                                              {100, 5, 6, ""},  {2000, 6, 9, ""}, {300, 0, 9, ""}};
    const hb::ArenaPlan plan = hb::plan_arena(r, 64);
    EXPECT_EQ(hb::find_conflict(r, plan), std::make_pair(-1, -1));
    for (int64_t o : plan.offsets) EXPECT_EQ(o % 64, 0);
    EXPECT_LT(plan.bytes, plan.unshared_bytes);
    EXPECT_THROW(hb::plan_arena({{-1, 0, 0, "negative"}}), std::invalid_argument);
    EXPECT_THROW(hb::plan_arena({{1, 2, 1, "backwards"}}), std::invalid_argument);
    EXPECT_THROW(hb::plan_arena(r, 0), std::invalid_argument);
}

}  // namespace
