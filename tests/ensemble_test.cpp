// The rounding-noise ensemble's members: the first measure the spread, each is a correct outcome,
// and a candidate the first do not hold meets one more at a time (docs/conformance.md "How many
// members").
#include "check/comparison.hpp"
#include "step_capture_sample.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace {

using harness::check::compare;
using harness::check::compare_growing;
using harness::check::members_of;
using harness::check::StepCapture;
using harness::check::tolerance_for;
using harness::testing::sample_capture;

// Twenty-four members equal to the baseline but two: member 9 took a decision that moves one
// element of a gradient by 1%, member 14 is 20% off in every gradient.
std::vector<StepCapture> sample_ensemble() {
    std::vector<StepCapture> ensemble(24, sample_capture());
    ensemble[8].gradients["conv.weight"][3] *= 1 + 1e-2f;
    for (auto& [name, g] : ensemble[13].gradients)
        for (float& v : g) v *= 1.2f;
    return ensemble;
}

// A quantity out of bounds from the baseline's value is within them where it is within its
// tolerance of a member's: the candidate passes with the first ensemble holding member 9.
TEST(Ensemble, ACandidateNearAMembersValueTookItsDecision) {
    const auto baseline = sample_capture();
    const auto ensemble = sample_ensemble();
    const StepCapture& candidate = ensemble[8];
    std::vector<int> asked;
    const auto result = compare_growing(candidate, baseline, tolerance_for(hb::Math::fp32), nullptr,
                                        6, 24, [&](int n) {
                                            asked.push_back(n);
                                            return members_of(ensemble, static_cast<size_t>(n));
                                        });
    EXPECT_TRUE(result.pass);
    EXPECT_EQ(result.members, 9);
    EXPECT_EQ(asked, (std::vector<int>{6, 7, 8, 9}));
    int near = 0;
    for (const auto& d : result.differences)
        if (d.member > 0) {
            ++near;
            EXPECT_EQ(d.quantity, "gradient conv.weight");
            EXPECT_EQ(d.member, 9);
            EXPECT_GT(d.relative, d.tolerance);
            EXPECT_EQ(d.ratio(), 0);
        }
    EXPECT_EQ(near, 1);
}

// Only the first members measure the spread: member 14, far off everywhere, widens no tolerance,
// and a candidate near no member's value is out of bounds against all of them. An ensemble that
// stops growing (a member failed) stops the comparison there.
TEST(Ensemble, MoreMembersWidenNoTolerance) {
    const auto baseline = sample_capture();
    const auto ensemble = sample_ensemble();
    auto candidate = baseline;
    candidate.gradients["conv.weight"][3] *= 1 + 2e-2f;
    const auto fp32 = tolerance_for(hb::Math::fp32);
    auto result = compare_growing(candidate, baseline, fp32, nullptr, 6, 24, [&](int n) {
        return members_of(ensemble, static_cast<size_t>(n));
    });
    EXPECT_FALSE(result.pass);
    EXPECT_EQ(result.members, 24);
    EXPECT_EQ(result.worst_relative()->quantity, "gradient conv.weight");
    EXPECT_LT(result.worst_relative()->tolerance, 1e-3);
    // Measured with all 24, the spread would hold it.
    EXPECT_TRUE(compare(candidate, baseline, fp32, members_of(ensemble)).pass);

    result = compare_growing(candidate, baseline, fp32, nullptr, 6, 24, [&](int n) {
        return members_of(ensemble, static_cast<size_t>(std::min(n, 7)));
    });
    EXPECT_FALSE(result.pass);
    EXPECT_EQ(result.members, 7);
}

}  // namespace
