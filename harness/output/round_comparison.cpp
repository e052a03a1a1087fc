#include "output/round_comparison.hpp"

#include "output/round_model.hpp"
#include "output/stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

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

std::vector<Comparison> compare_over_rounds(const std::vector<StepsByRound>& backends,
                                            size_t baseline,
                                            const std::vector<std::string>& streams) {
    std::vector<Comparison> comparisons(backends.size());
    std::vector<RoundCell> cells;
    // Each backend's least variance of a round's figure: its steps' spread about their round's
    // mean (log scale, pooled over its rounds) over its steps a round.
    std::vector<double> least(backends.size(), 0);
    for (size_t i = 0; i < backends.size(); ++i) {
        double squares = 0, df = 0, steps_seen = 0, rounds_seen = 0;
        for (const auto& [round, steps] : backends[i]) {
            const auto kept = positive_finite(steps);
            if (kept.empty()) continue;
            cells.push_back({i, static_cast<size_t>(round), round_figure(kept)});
            const auto n = static_cast<double>(kept.size());
            double mean = 0;
            for (double x : kept) mean += std::log(x) / n;
            for (double x : kept) squares += (std::log(x) - mean) * (std::log(x) - mean);
            df += n - 1;
            steps_seen += n;
            ++rounds_seen;
        }
        if (df > 0) least[i] = squares / df / (steps_seen / rounds_seen);
    }
    const std::vector<ModelRatio> model = fit_round_model(cells, backends.size(), baseline, least);
    // A round's baseline steps, its workers' together where it ran several: a backend's round is
    // paired with its round once.
    std::map<int, std::vector<double>> baseline_steps;
    for (const auto& [round, steps] : backends[baseline]) {
        std::vector<double>& all = baseline_steps[round];
        all.insert(all.end(), steps.begin(), steps.end());
    }
    for (size_t i = 0; i < backends.size(); ++i) {
        if (i == baseline) continue;
        std::vector<Round> rounds;
        for (const auto& [round, steps] : backends[i])
            if (const auto base = baseline_steps.find(round); base != baseline_steps.end())
                rounds.push_back({steps, base->second});
        Comparison& c = comparisons[i] = compare(rounds, streams.at(i));
        const ModelRatio& m = model[i];
        if (c.rounds < 2 || !std::isfinite(m.log_standard_error)) continue;
        const double t = student_t_quantile(1 - (1 - kConfidenceLevel) / 2, m.degrees_of_freedom);
        c.ratio = std::exp(m.log_ratio);
        c.ratio_interval = {std::exp(m.log_ratio - t * m.log_standard_error),
                            std::exp(m.log_ratio + t * m.log_standard_error)};
        c.log_standard_error = m.log_standard_error;
        c.degrees_of_freedom = m.degrees_of_freedom;
    }
    return comparisons;
}

std::vector<Comparison> compare_rounds(const std::vector<BackendRounds>& backends, size_t baseline,
                                       const std::string& config_sha256) {
    std::vector<StepsByRound> steps(backends.size());
    std::vector<std::string> streams;
    for (size_t i = 0; i < backends.size(); ++i) {
        for (const BackendRun* r : backends[i])
            if (r->status == Status::ok) steps[i].emplace_back(r->round, r->samples_ms);
        streams.push_back(config_sha256 + " " + backends[i].front()->name() + " vs " +
                          backends[baseline].front()->name());
    }
    return compare_over_rounds(steps, baseline, streams);
}

double relative_half_width(const Comparison& c) {
    if (!c.ratio_interval.known() || !(c.ratio > 0)) return std::numeric_limits<double>::infinity();
    return std::max(c.ratio_interval.hi / c.ratio - 1, 1 - c.ratio_interval.lo / c.ratio);
}

}  // namespace harness::output
