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

std::vector<std::string> within_target(const output::RoundPlan& plan, int round,
                                       const std::vector<output::BackendRun>& runs,
                                       const std::string& config_sha256) {
    std::vector<std::string> done;
    if (!(plan.target > 0) || round < std::max(2, plan.min_rounds)) return done;
    const auto backends = output::rounds_by_backend(runs);
    const auto baseline = std::find_if(backends.begin(), backends.end(), [&](const auto& b) {
        return b.front()->name() == plan.baseline;
    });
    if (baseline == backends.end()) return done;
    const std::vector<output::Comparison> comparisons = output::compare_rounds(
        backends, static_cast<size_t>(baseline - backends.begin()), config_sha256);
    for (size_t i = 0; i < backends.size(); ++i)
        if (&backends[i] != &*baseline && reached_target(plan, comparisons[i]))
            done.push_back(backends[i].front()->name());
    return done;
}

Stop stop_after(const output::RoundPlan& plan, int round,
                const std::vector<output::BackendRun>& runs, const std::string& config_sha256,
                double elapsed_s, double next_round_s) {
    if (round >= plan.max_rounds) return Stop::max_rounds;
    const auto backends = output::rounds_by_backend(runs);
    const bool compared =
        backends.size() > 1 && std::any_of(backends.begin(), backends.end(), [&](const auto& b) {
            return b.front()->name() == plan.baseline;
        });
    const std::vector<std::string> done = within_target(plan, round, runs, config_sha256);
    bool all = compared && round >= std::max(2, plan.min_rounds) && plan.target > 0;
    for (const auto& b : backends) {
        const bool ran = std::any_of(b.begin(), b.end(), [](const output::BackendRun* r) {
            return r->status == output::Status::ok;
        });
        const std::string name = b.front()->name();
        // One that did not run this round has reached its target before: no round waits for it.
        if (name == plan.baseline || !ran || b.back()->round < round) continue;
        all = all && std::find(done.begin(), done.end(), name) != done.end();
    }
    if (all) return Stop::target;
    if (plan.budget_s > 0 && elapsed_s + next_round_s > plan.budget_s) return Stop::budget;
    return Stop::no;
}

}  // namespace harness::run
