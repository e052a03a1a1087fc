// Each CPU row of a run against the roofline bound (docs/roofline.md): once the rounds end, the
// ceilings measured on each thread count an ok CPU row ran on, recorded in the provenance with
// the step's cost by layer kind (its operation kinds left for the caller to name), and each such
// row's bound_ms, the step's bound at its thread count.
#pragma once

#include "hb/plugin.h"
#include "model/graph.hpp"
#include "output/record.hpp"

#include <vector>

namespace harness::roofline {

// Rows bounded: ok, on the CPU, one process, with a known thread count. Others keep bound_ms 0.
void bound_runs(const model::Graph& graph, const hb_optimizer& optimizer,
                output::Provenance& provenance, std::vector<output::BackendRun>& runs);

// The provenance's ceilings measured on `threads` threads; null when none were.
const output::Ceilings* ceilings_on(const output::Provenance& provenance, int threads);

}  // namespace harness::roofline
