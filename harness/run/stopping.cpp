#include "run/stopping.hpp"

#include <algorithm>

namespace harness::run {

const char* to_string(Stop stop) {
    switch (stop) {
        case Stop::no:
            return "no";
        case Stop::target:
            return "target";
        case Stop::budget:
            return "budget";
        case Stop::max_rounds:
            return "max_rounds";
        case Stop::nothing_ran:
            return "nothing_ran";
    }
    return "unknown";
}

bool reached_target(const output::RoundPlan& plan, const output::BackendRounds& runs,
                    const output::BackendRounds& baseline, const std::string& config_sha256) {
    return plan.target > 0 && output::relative_half_width(output::compare_rounds(
                                  runs, baseline, config_sha256)) <= plan.target;
}

Stop stop_after(const output::RoundPlan& plan, int round, const std::vector<output::BackendRun>& runs,
                const std::string& config_sha256, double elapsed_s, double round_s) {
    if (round >= plan.max_rounds) return Stop::max_rounds;
    if (round < plan.min_rounds) return Stop::no;
    if (plan.target > 0 && round >= 2) {
        const auto backends = output::rounds_by_backend(runs);
        const auto baseline = std::find_if(backends.begin(), backends.end(), [&](const auto& b) {
            return b.front()->name() == plan.baseline;
        });
        const bool compared = baseline != backends.end() && backends.size() > 1;
        bool all = compared;
        for (const auto& b : backends) {
            const bool ran = std::any_of(b.begin(), b.end(), [](const output::BackendRun* r) {
                return r->status == output::Status::ok;
            });
            if (!compared || &b == &*baseline || !ran) continue;
            all = all && reached_target(plan, b, *baseline, config_sha256);
        }
        if (all) return Stop::target;
    }
    if (plan.budget_s > 0 && elapsed_s + round_s > plan.budget_s) return Stop::budget;
    return Stop::no;
}

}  // namespace harness::run
