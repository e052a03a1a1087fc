// Order statistics shared by the per-run statistics (compute_stats) and the comparisons between
// runs (comparison_stats.hpp).
#pragma once

#include <vector>

namespace harness::output {

// The p-quantile (0 <= p <= 1) of non-empty ascending `sorted`, interpolated linearly between
// order statistics (numpy's default, Hyndman & Fan type 7).
double percentile(const std::vector<double>& sorted, double p);

// The steps that are positive finite numbers, in their order: the ones a comparison counts.
std::vector<double> positive_finite(const std::vector<double>& steps);

}  // namespace harness::output
