#include "output/comparison_stats.hpp"

#include "data/generator.hpp"
#include "output/stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <utility>

namespace harness::output {

namespace {

// Midranks of x and y pooled: the sum of x's ranks and, over each group of t equal values,
// the sum of t^3 - t.
struct Ranks {
    double rank_sum_x = 0, tie_term = 0;
};

Ranks rank(const std::vector<double>& x, const std::vector<double>& y) {
    std::vector<std::pair<double, bool>> pooled;  // value, whether from x
    pooled.reserve(x.size() + y.size());
    for (double v : x) pooled.emplace_back(v, true);
    for (double v : y) pooled.emplace_back(v, false);
    std::sort(pooled.begin(), pooled.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    Ranks r;
    for (size_t i = 0; i < pooled.size();) {
        size_t j = i + 1;
        while (j < pooled.size() && pooled[j].first == pooled[i].first) ++j;
        const double midrank = static_cast<double>(i + 1 + j) / 2;  // ranks i+1 .. j
        const auto t = static_cast<double>(j - i);
        r.tie_term += t * t * t - t;
        for (size_t k = i; k < j; ++k)
            if (pooled[k].second) r.rank_sum_x += midrank;
        i = j;
    }
    return r;
}

// P(U >= u) for samples of m and n values without ties under the null hypothesis: the share of
// the C(m+n, m) orderings of the pooled values in which u or more pairs (x, y) have x > y.
// counts[j][k] is the number of orderings of i x's and j y's with k such pairs, for i = 0..m:
// the largest value is an x (above all j y's: k - j pairs before it) or a y (none).
double exact_upper_tail(double u, size_t m, size_t n) {
    const size_t most = m * n;
    std::vector<std::vector<double>> counts(n + 1, std::vector<double>(most + 1, 0));
    for (auto& c : counts) c[0] = 1;  // i = 0
    for (size_t i = 1; i <= m; ++i)
        for (size_t j = 1; j <= n; ++j)
            for (size_t k = most + 1; k-- > 0;)  // downwards: counts[j][k - j] is still i - 1's
                counts[j][k] = (k >= j ? counts[j][k - j] : 0) + counts[j - 1][k];
    double total = 0, tail = 0;
    for (size_t k = 0; k <= most; ++k) {
        total += counts[n][k];
        if (static_cast<double>(k) >= u) tail += counts[n][k];
    }
    return tail / total;
}

// Draws for the bootstrap: std::mt19937_64, whose outputs the C++ standard fixes, seeded with
// the data generator's stream key (docs/design.md §5) of (kBootstrapSeed, stream), and mapped to
// indices by rejection and remainder (no std::uniform_int_distribution, whose mapping each
// standard library chooses).
class Draws {
public:
    explicit Draws(const std::string& stream)
        : engine_(data::fnv1a64(stream) ^ data::splitmix64(kBootstrapSeed)) {}

    // Uniform on 0 .. n-1 (n > 0): outputs below 2^64 mod n are drawn again, so that every index
    // has as many outputs.
    size_t index(size_t n) {
        const auto count = static_cast<uint64_t>(n);
        const uint64_t reject_below = (uint64_t{0} - count) % count;
        uint64_t x = engine_();
        while (x < reject_below) x = engine_();
        return static_cast<size_t>(x % count);
    }

private:
    std::mt19937_64 engine_;
};

// The median of non-empty xs as compute_stats gives it (type 7), reordering xs.
double median_in_place(std::vector<double>& xs) {
    const size_t mid = (xs.size() - 1) / 2;
    std::nth_element(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(mid), xs.end());
    const double lo = xs[mid];
    if (xs.size() % 2 == 1) return lo;
    const double hi =
        *std::min_element(xs.begin() + static_cast<std::ptrdiff_t>(mid) + 1, xs.end());
    return lo + 0.5 * (hi - lo);
}

double median(std::vector<double> xs) {
    return median_in_place(xs);
}

// The median of a resample of `steps` (as many draws, with replacement).
double resampled_median(const std::vector<double>& steps, Draws& draws,
                        std::vector<double>& scratch) {
    scratch.resize(steps.size());
    for (double& s : scratch) s = steps[draws.index(steps.size())];
    return median_in_place(scratch);
}

// The central kConfidenceLevel of the resamples (percentile bootstrap).
Interval central_interval(std::vector<double> resamples) {
    std::sort(resamples.begin(), resamples.end());
    const double tail = (1 - kConfidenceLevel) / 2;
    return {percentile(resamples, tail), percentile(resamples, 1 - tail)};
}

Interval exp_of(const Interval& log_interval) {
    return {std::exp(log_interval.lo), std::exp(log_interval.hi)};
}

}  // namespace

MannWhitney mann_whitney_u(const std::vector<double>& x, const std::vector<double>& y,
                           MannWhitneyMethod method) {
    MannWhitney result;
    if (x.empty() || y.empty()) return result;
    const auto m = static_cast<double>(x.size()), n = static_cast<double>(y.size());
    const Ranks r = rank(x, y);
    result.u = r.rank_sum_x - m * (m + 1) / 2;
    const double u = std::max(result.u, m * n - result.u);  // the larger tail, doubled below
    result.exact = method == MannWhitneyMethod::exact ||
                   (method == MannWhitneyMethod::automatic && r.tie_term == 0 &&
                    x.size() <= kMannWhitneyExactLimit && y.size() <= kMannWhitneyExactLimit);
    if (result.exact) {
        result.p = std::min(1.0, 2 * exact_upper_tail(u, x.size(), y.size()));
        return result;
    }
    const double total = m + n;
    const double sd = std::sqrt(m * n / 12 * ((total + 1) - r.tie_term / (total * (total - 1))));
    if (!(sd > 0)) {  // every value equal
        result.p = 1;
        return result;
    }
    const double z = (u - m * n / 2 - 0.5) / sd;              // continuity correction
    result.p = std::min(1.0, std::erfc(z / std::sqrt(2.0)));  // 2 P(Z > z)
    return result;
}

double round_figure(std::vector<double> steps) {
    const size_t lower = (steps.size() - 1) / 2;
    std::nth_element(steps.begin(), steps.begin() + static_cast<std::ptrdiff_t>(lower),
                     steps.end());
    return steps[lower];
}

std::string ratio_and_interval(double ratio, const Interval& interval) {
    return interval.known()
               ? fmt::format("{:.3f}x [{:.3f}, {:.3f}]", ratio, interval.lo, interval.hi)
               : fmt::format("{:.2f}x", ratio);
}

namespace {

double t_quantile(double p, double degrees_of_freedom) {
    const double v = degrees_of_freedom;
    // Past 1e7 degrees of freedom t is the normal distribution to 1e-7, and lgamma's difference
    // of two large numbers would lose more than that.
    const bool normal = v > 1e7;
    const double scale = normal ? 1 / std::sqrt(2 * M_PI)
                                : std::exp(std::lgamma((v + 1) / 2) - std::lgamma(v / 2)) /
                                      std::sqrt(v * M_PI);
    auto density = [&](double t) {
        return scale * (normal ? std::exp(-t * t / 2) : std::pow(1 + t * t / v, -(v + 1) / 2));
    };
    // P(0 < T < x), Simpson's rule over 2000 intervals.
    auto central = [&](double x) {
        constexpr int kIntervals = 2000;
        const double h = x / kIntervals;
        double sum = density(0) + density(x);
        for (int i = 1; i < kIntervals; ++i) sum += (i % 2 == 1 ? 4 : 2) * density(i * h);
        return sum * h / 3;
    };
    const double target = std::abs(p - 0.5);
    double lo = 0, hi = 1;
    while (central(hi) < target && hi < 1e6) hi *= 2;
    for (int i = 0; i < 100 && hi - lo > 1e-10 * hi; ++i) {
        const double mid = (lo + hi) / 2;
        (central(mid) < target ? lo : hi) = mid;
    }
    return (p < 0.5 ? -1 : 1) * (lo + hi) / 2;
}

}  // namespace

// Each quantile is 10^5 evaluations of the density; a report asks for few distinct ones, often.
double student_t_quantile(double p, double degrees_of_freedom) {
    thread_local std::map<std::pair<double, double>, double> known;
    const auto key = std::pair{p, degrees_of_freedom};
    if (auto it = known.find(key); it != known.end()) return it->second;
    if (known.size() > 4096) known.clear();
    return known[key] = t_quantile(p, degrees_of_freedom);
}

namespace {

// mean ± t sd / sqrt(n) over n >= 2 values, for kConfidenceLevel; its standard error in `se`.
Interval student_interval(const std::vector<double>& values, double& se) {
    const auto n = static_cast<double>(values.size());
    double mean = 0;
    for (double v : values) mean += v / n;
    double squares = 0;
    for (double v : values) squares += (v - mean) * (v - mean);
    se = std::sqrt(squares / (n - 1) / n);
    const double t = student_t_quantile(1 - (1 - kConfidenceLevel) / 2, n - 1);
    return {mean - t * se, mean + t * se};
}

}  // namespace

Comparison compare(const std::vector<Round>& rounds, const std::string& stream) {
    std::vector<Round> kept;
    for (const Round& r : rounds) {
        Round k{positive_finite(r.ms), positive_finite(r.baseline_ms)};
        if (!k.ms.empty() && !k.baseline_ms.empty()) kept.push_back(std::move(k));
    }
    Comparison c;
    if (kept.empty()) return c;
    c.rounds = static_cast<int>(kept.size());
    const auto count = static_cast<double>(kept.size());

    double log_sum = 0, difference_sum = 0;
    std::vector<double> pooled, pooled_baseline, logs, differences_of_rounds;
    bool enough_steps = true;
    const bool one_round = kept.size() == 1;
    for (const Round& r : kept) {
        const double run = one_round ? median(r.ms) : round_figure(r.ms),
                     baseline = one_round ? median(r.baseline_ms) : round_figure(r.baseline_ms);
        log_sum += std::log(run / baseline);
        difference_sum += run - baseline;
        logs.push_back(std::log(run / baseline));
        differences_of_rounds.push_back(run - baseline);
        pooled.insert(pooled.end(), r.ms.begin(), r.ms.end());
        pooled_baseline.insert(pooled_baseline.end(), r.baseline_ms.begin(), r.baseline_ms.end());
        enough_steps = enough_steps && r.ms.size() >= 2 && r.baseline_ms.size() >= 2;
    }
    c.ratio = std::exp(log_sum / count);
    c.difference_ms = difference_sum / count;
    c.p = mann_whitney_u(pooled, pooled_baseline).p;
    if (kept.size() >= 2) {
        // The rounds are the experiment's repetitions: what a round shares (its worker's memory
        // placement, its minute's neighbours) moves all its steps, so the rounds' spread, not
        // the steps', decides, with Student's t for their few degrees of freedom.
        double difference_se = 0;
        c.ratio_interval = exp_of(student_interval(logs, c.log_standard_error));
        c.degrees_of_freedom = count - 1;
        c.difference_interval = student_interval(differences_of_rounds, difference_se);
        return c;
    }
    if (!enough_steps) return c;

    // Each resample: the round's two runs resampled step by step.
    Draws draws(stream);
    std::vector<double> differences(kBootstrapResamples), scratch;
    c.log_ratio_resamples.resize(kBootstrapResamples);
    for (size_t b = 0; b < c.log_ratio_resamples.size(); ++b) {
        const double run = resampled_median(kept[0].ms, draws, scratch);
        const double baseline = resampled_median(kept[0].baseline_ms, draws, scratch);
        c.log_ratio_resamples[b] = std::log(run / baseline);
        differences[b] = run - baseline;
    }
    c.ratio_interval = exp_of(central_interval(c.log_ratio_resamples));
    c.difference_interval = central_interval(differences);
    return c;
}

GeometricMean geometric_mean(const std::vector<const Comparison*>& comparisons) {
    std::vector<const Comparison*> kept;
    for (const Comparison* c : comparisons)
        if (c->rounds > 0) kept.push_back(c);
    GeometricMean g;
    if (kept.empty()) return g;
    g.comparisons = static_cast<int>(kept.size());
    const auto count = static_cast<double>(kept.size());
    double log_sum = 0;
    bool resampled = true;
    for (const Comparison* c : kept) {
        log_sum += std::log(c->ratio);
        resampled = resampled && c->log_ratio_resamples.size() == kBootstrapResamples;
    }
    g.ratio = std::exp(log_sum / count);
    if (resampled) {
        std::vector<double> means(kBootstrapResamples, 0);
        for (const Comparison* c : kept)
            for (size_t b = 0; b < means.size(); ++b)
                means[b] += c->log_ratio_resamples[b] / count;
        g.ratio_interval = exp_of(central_interval(std::move(means)));
        return g;
    }
    // Welch-Satterthwaite: the variance of the mean and its degrees of freedom.
    double variance = 0, fourth_over_df = 0;
    for (const Comparison* c : kept) {
        double v = c->log_standard_error * c->log_standard_error;
        if (c->rounds == 1) {
            if (c->log_ratio_resamples.size() != kBootstrapResamples) return g;
            double mean = 0;
            for (double r : c->log_ratio_resamples) mean += r / kBootstrapResamples;
            v = 0;
            for (double r : c->log_ratio_resamples)
                v += (r - mean) * (r - mean) / (kBootstrapResamples - 1);
        } else {
            fourth_over_df += v * v / c->degrees_of_freedom;
        }
        if (!std::isfinite(v)) return g;
        variance += v;
    }
    const double df = fourth_over_df > 0 ? variance * variance / fourth_over_df : 1e9;
    const double half =
        student_t_quantile(1 - (1 - kConfidenceLevel) / 2, df) * std::sqrt(variance) / count;
    g.ratio_interval = {g.ratio * std::exp(-half), g.ratio * std::exp(half)};
    return g;
}

}  // namespace harness::output
