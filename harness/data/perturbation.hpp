#pragma once

#include "data/initial_state.hpp"
#include "model/graph.hpp"

#include <cstdint>
#include <vector>

namespace harness::data {

// Moves every non-zero trainable element one ulp up or down (the direction from the stream
// (seed, "perturb.<tensor>")), the ulp of a floating-point format with `significand_bits` bits of
// significand: 24 is float32's own ulp, 11 TF32's and float16's, 8 bfloat16's. A training step
// from these weights differs from the original only by noise of that format's rounding, so
// comparing the two measures how strongly this model amplifies it — the yardstick `harness check`
// scales the tolerances of a backend computing in that format by.
void perturb_by_one_ulp(const model::Graph& graph, uint64_t seed, std::vector<HostTensor>& state,
                        int significand_bits = 24);

}  // namespace harness::data
