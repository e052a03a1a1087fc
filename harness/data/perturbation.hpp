#pragma once

#include "data/initial_state.hpp"
#include "model/graph.hpp"

#include <cstdint>
#include <vector>

namespace harness::data {

// Moves every non-zero trainable element one float32 ulp up or down (the direction from the
// stream (seed, "perturb.<tensor>")). A training step from these weights differs from the
// original only by rounding-level noise, so comparing the two measures how strongly this model
// amplifies float32 rounding — the yardstick `harness check` scales its tolerances by.
void perturb_by_one_ulp(const model::Graph& graph, uint64_t seed, std::vector<HostTensor>& state);

}  // namespace harness::data
