// When a run of rounds stops (docs/statistics.md, "Rounds in one run"): on the answer, not on a
// count. After each round from the plan's minimum on (and never before the second when it aims
// at a target), a backend whose interval against the baseline is within the target runs no more
// rounds, and the run stops once every backend's is; it stops at the most rounds; and after any
// round, the least rounds not excepted, it stops when another would end past the budget.
#pragma once

#include "output/record.hpp"
#include "output/round_comparison.hpp"

#include <string>
#include <vector>

namespace harness::run {

// nothing_ran: no entry ended ok in the first round, so no later round would run anything.
enum class Stop { no, target, budget, max_rounds, nothing_ran };
const char* to_string(Stop stop);

// After round `round` (1, 2, ...) of `runs` (every run so far), `elapsed_s` since the first round
// started, the next round expected to take `next_round_s`.
Stop stop_after(const output::RoundPlan& plan, int round,
                const std::vector<output::BackendRun>& runs, const std::string& config_sha256,
                double elapsed_s, double next_round_s);

// The backends (row names) whose interval against the plan's baseline is within its target after
// round `round`: none before the plan's least rounds or the second, never the baseline.
std::vector<std::string> within_target(const output::RoundPlan& plan, int round,
                                       const std::vector<output::BackendRun>& runs,
                                       const std::string& config_sha256);

// Whether `comparison` (a backend against the plan's baseline) has reached the plan's target: its
// interval is known and within the target.
bool reached_target(const output::RoundPlan& plan, const output::Comparison& comparison);

}  // namespace harness::run
