// How much slower one run is than another, with its uncertainty (docs/statistics.md): for one
// round, the ratio of median step times with a seeded percentile bootstrap interval over its timed
// steps; over several rounds, the geometric mean of the rounds' ratios of round figures with
// Student's t interval (over the rounds here, over the rounds model in round_model.hpp); the
// two-sided Mann-Whitney U test; the geometric mean of ratios over configs.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace harness::output {

// The bootstrap's fixed seed and resample count (docs/statistics.md): the same files give the same
// intervals on every run and every machine.
inline constexpr uint64_t kBootstrapSeed = 1;
inline constexpr size_t kBootstrapResamples = 10000;
inline constexpr double kConfidenceLevel = 0.95;
// Mann-Whitney's automatic method is exact up to this many values in each sample, when no value
// is tied.
inline constexpr size_t kMannWhitneyExactLimit = 20;

struct Interval {
    double lo = std::numeric_limits<double>::quiet_NaN();
    double hi = std::numeric_limits<double>::quiet_NaN();
    bool known() const { return !std::isnan(lo) && !std::isnan(hi); }
    bool contains(double x) const { return lo <= x && x <= hi; }
};

enum class MannWhitneyMethod {
    automatic,  // exact without ties when both samples have at most kMannWhitneyExactLimit values
    exact,      // the exact null distribution of U (ties are not allowed for; its table of
                // counts has (n + 1)(m n + 1) entries: for small samples)
    normal,     // the normal approximation with tie and continuity corrections
};

struct MannWhitney {
    double u = 0;  // U of the first sample: pairs (x, y) with x > y, a tie counting one half
    double p = std::numeric_limits<double>::quiet_NaN();  // two-sided; NaN when a sample is empty
    bool exact = false;                                   // which method gave p
};

// The two-sided Mann-Whitney U test of x against y (as scipy.stats.mannwhitneyu with
// use_continuity=True, alternative="two-sided").
MannWhitney mann_whitney_u(const std::vector<double>& x, const std::vector<double>& y,
                           MannWhitneyMethod method = MannWhitneyMethod::automatic);

// One round: every timed step (ms) of a run and of the baseline run it is compared with, taken
// in the same round (the same results file).
struct Round {
    std::vector<double> ms, baseline_ms;
};

// A round's figure over its timed steps (positive, non-empty): the lower median, the
// ceil(n/2)-th smallest. A disturbed step only lengthens a step, so with n steps the figure stands
// while fewer than n/2 + 1 of them are disturbed (one of two, one of three, two of four).
double round_figure(std::vector<double> steps);

// The p-quantile (0 < p < 1) of Student's t distribution with `degrees_of_freedom` (> 0, not
// necessarily whole), by bisection on its distribution function, integrated by Simpson's rule.
double student_t_quantile(double p, double degrees_of_freedom);

// A run against a baseline. The ratio is time over the baseline's time: above 1 is slower.
struct Comparison {
    int rounds = 0;  // rounds compared; 0 when there was nothing to compare
    // One round: the ratio of medians. Several: the geometric mean over rounds of each round's
    // ratio of round figures (round_figure), or the rounds model's ratio.
    double ratio = std::numeric_limits<double>::quiet_NaN();
    Interval ratio_interval;  // kConfidenceLevel; unknown when a run has fewer than two steps
    // The mean over rounds of each round's difference of figures (one round: of medians), ms.
    double difference_ms = std::numeric_limits<double>::quiet_NaN();
    Interval difference_interval;
    // Mann-Whitney over every step of every round, pooled; NaN when there was nothing to compare.
    double p = std::numeric_limits<double>::quiet_NaN();
    // One round: the bootstrap's log(ratio) of each resample, in the order drawn (for
    // geometric_mean). Several: the standard error of the mean of the rounds' log ratios.
    std::vector<double> log_ratio_resamples;
    double log_standard_error = std::numeric_limits<double>::quiet_NaN();
    // Of log_standard_error: the rounds less one, or the rounds model's residual degrees of
    // freedom.
    double degrees_of_freedom = 0;

    // The interval leaves out 1: the runs' medians differ.
    bool significant() const { return ratio_interval.known() && !ratio_interval.contains(1); }
};

// "1.472x [1.431, 1.502]" (three decimals, so that a bound close to 1 shows on which side of it
// it lies), or "1.47x" when the interval is not known.
std::string ratio_and_interval(double ratio, const Interval& interval);

// The runs of `rounds` against their baselines. `stream` names the comparison (config, run,
// baseline): the bootstrap draws from the stream (kBootstrapSeed, stream), so two comparisons of
// one report draw independently and each draws the same way every time. Steps that are not
// positive finite numbers are left out; a round in which either run has no step is left out.
Comparison compare(const std::vector<Round>& rounds, const std::string& stream);

// The geometric mean of the ratios of several comparisons (one per config). When each is of one
// round, its interval comes from their bootstrap resamples: the k-th resample of the mean is the
// mean of their k-th resamples (they must have been drawn from different streams). When any is of
// several rounds, from Student's t with the Welch-Satterthwaite degrees of freedom, a one-round
// comparison's variance that of its resamples, with unbounded degrees of freedom.
struct GeometricMean {
    int comparisons = 0;
    double ratio = std::numeric_limits<double>::quiet_NaN();
    Interval ratio_interval;  // unknown when any comparison has none

    bool significant() const { return ratio_interval.known() && !ratio_interval.contains(1); }
};
GeometricMean geometric_mean(const std::vector<const Comparison*>& comparisons);

}  // namespace harness::output
