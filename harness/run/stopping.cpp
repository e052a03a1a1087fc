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

bool reached_target(const output::RoundPlan& plan, const output::Comparison& comparison) {
    return plan.target > 0 && output::relative_half_width(comparison) <= plan.target;
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
        const std::vector<output::Comparison> comparisons =
            compared
                ? output::compare_rounds(backends, static_cast<size_t>(baseline - backends.begin()),
                                         config_sha256)
                : std::vector<output::Comparison>();
        bool all = compared;
        for (size_t i = 0; compared && i < backends.size(); ++i) {
            const auto& b = backends[i];
            const bool ran = std::any_of(b.begin(), b.end(), [](const output::BackendRun* r) {
                return r->status == output::Status::ok;
            });
            if (&b == &*baseline || !ran) continue;
            all = all && reached_target(plan, comparisons[i]);
        }
        if (all) return Stop::target;
    }
    if (plan.budget_s > 0 && elapsed_s + round_s > plan.budget_s) return Stop::budget;
    return Stop::no;
}

}  // namespace harness::run
