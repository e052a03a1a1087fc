// Weak scaling of data-parallel rows (docs/parallel.md).
#pragma once

#include "output/record.hpp"

#include <vector>

namespace harness::output {

// Each data-parallel row's scaling efficiency: the median step of the same backend at one rank
// (in `runs`) over its own. NaN where there is no such row, where either did not finish, or
// where either was oversubscribed: its figure would say nothing about scaling.
void fill_scaling_efficiency(std::vector<BackendRun>& runs);

}  // namespace harness::output
