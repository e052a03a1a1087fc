#include "output/round_comparison.hpp"

#include <algorithm>
#include <limits>

namespace harness::output {

std::vector<BackendRounds> rounds_by_backend(const std::vector<BackendRun>& runs) {
    std::vector<BackendRounds> backends;
    for (const BackendRun& r : runs) {
        auto it = std::find_if(backends.begin(), backends.end(),
                               [&](const BackendRounds& b) { return b.front()->name() == r.name(); });
        if (it == backends.end())
            backends.push_back({&r});
        else
            it->push_back(&r);
    }
    return backends;
}

Comparison compare_rounds(const BackendRounds& runs, const BackendRounds& baseline,
                          const std::string& config_sha256) {
    std::vector<Round> rounds;
    for (const BackendRun* r : runs)
        for (const BackendRun* b : baseline)
            if (b->round == r->round && r->status == Status::ok && b->status == Status::ok)
                rounds.push_back({r->samples_ms, b->samples_ms});
    return compare(rounds, config_sha256 + " " + runs.front()->name() + " vs " +
                               baseline.front()->name());
}

double relative_half_width(const Comparison& c) {
    if (!c.ratio_interval.known() || !(c.ratio > 0)) return std::numeric_limits<double>::infinity();
    return std::max(c.ratio_interval.hi / c.ratio - 1, 1 - c.ratio_interval.lo / c.ratio);
}

}  // namespace harness::output
