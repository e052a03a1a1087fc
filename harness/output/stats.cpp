#include "output/stats.hpp"

#include "output/record.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace harness::output {

// Google Benchmark's statistics give only mean/median/stddev/cv over repetitions, so the
// per-sample percentiles are computed here.
double percentile(const std::vector<double>& sorted, double p) {
    const double h = static_cast<double>(sorted.size() - 1) * p;
    const auto lo = static_cast<size_t>(std::floor(h));
    if (lo + 1 >= sorted.size()) return sorted.back();
    const double frac = h - static_cast<double>(lo);
    return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

namespace {

double sample_stddev(const std::vector<double>& xs, double mean) {
    if (xs.size() < 2) return 0;
    double sum_sq = 0;
    for (double x : xs) sum_sq += (x - mean) * (x - mean);
    return std::sqrt(sum_sq / static_cast<double>(xs.size() - 1));
}

}  // namespace

Stats compute_stats(const std::vector<double>& samples_ms, int64_t batch, int64_t flops_per_step) {
    Stats s;
    if (samples_ms.empty()) return s;

    std::vector<double> sorted = samples_ms;
    std::sort(sorted.begin(), sorted.end());
    const auto n = static_cast<double>(sorted.size());

    s.median_ms = percentile(sorted, 0.5);
    s.mean_ms = std::accumulate(sorted.begin(), sorted.end(), 0.0) / n;
    s.stddev_ms = sample_stddev(sorted, s.mean_ms);
    s.min_ms = sorted.front();
    s.max_ms = sorted.back();
    s.p10_ms = percentile(sorted, 0.10);
    s.p90_ms = percentile(sorted, 0.90);
    s.iqr_ms = percentile(sorted, 0.75) - percentile(sorted, 0.25);
    s.cv = s.mean_ms > 0 ? s.stddev_ms / s.mean_ms : 0;
    if (s.median_ms > 0) {
        s.images_per_s = static_cast<double>(batch) * 1000.0 / s.median_ms;
        s.gflops = static_cast<double>(flops_per_step) / (s.median_ms * 1e6);
        s.noisy = s.iqr_ms / s.median_ms > 0.10;
    }
    return s;
}

std::vector<double> positive_finite(const std::vector<double>& steps) {
    std::vector<double> kept;
    for (double s : steps)
        if (s > 0 && std::isfinite(s)) kept.push_back(s);
    return kept;
}

}  // namespace harness::output
