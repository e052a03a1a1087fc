// A run of several rounds read per backend: each backend's runs, one per round, and its ratio to
// the baseline over the rounds in which both ran ok (docs/statistics.md, "Rounds in one run").
// What `harness run`'s table prints and its stopping rule judges.
#pragma once

#include "output/comparison_stats.hpp"
#include "output/record.hpp"

#include <string>
#include <vector>

namespace harness::output {

// Each backend's runs (by row name), one per round, in the order the backends first ran.
using BackendRounds = std::vector<const BackendRun*>;
std::vector<BackendRounds> rounds_by_backend(const std::vector<BackendRun>& runs);

// `runs` against `baseline` over the rounds in which both ran ok, drawn from the stream
// `harness report` uses for the same comparison (config, backend, baseline), so that both print
// the same figures.
Comparison compare_rounds(const BackendRounds& runs, const BackendRounds& baseline,
                          const std::string& config_sha256);

// How far the interval reaches from the ratio, as a share of it: max(hi / ratio - 1,
// 1 - lo / ratio); infinite when the interval is not known.
double relative_half_width(const Comparison& comparison);

}  // namespace harness::output
