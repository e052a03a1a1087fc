// The stacked-hourglass network of Newell, Yang and Deng (2016), exactly as the original Torch
// code (hg.lua) builds it; docs/design.md §4 gives the structure and the layer names.
#pragma once

#include "model/graph.hpp"

namespace harness::model {

enum class LossReduction { sum, mean };  // over the stacks' MSE losses

struct HourglassSpec {
    int stacks = 8;
    int features = 256;  // F
    int depth = 4;       // levels of the hourglass recursion
    int joints = 16;     // J, heatmap channels
    int input_size = 256;
    int batch = 6;
    bool conv_bias = true;
    bool bn_scale = true;  // false: batch norm learns only its shift (beta), no scale (gamma)
    float bn_momentum = 0.1f;
    float bn_eps = 1e-5f;
    LossReduction loss = LossReduction::sum;
};

// Throws std::invalid_argument when the spec cannot be built (e.g. the input size does not
// survive `depth` halvings after the stem's factor 4).
Graph build_hourglass(const HourglassSpec& spec);

}  // namespace harness::model
