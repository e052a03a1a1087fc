#pragma once

#include "results/record.hpp"

#include <string>
#include <vector>

namespace harness::results {

// The human-readable summary printed by `harness run`: one line per backend (status, median ms,
// spread, images/s, GFLOP/s, first/last loss), a noise warning where IQR/median > 10%, and the
// reason for every backend that did not run.
std::string format_table(const std::vector<BackendRun>& runs);

}  // namespace harness::results
