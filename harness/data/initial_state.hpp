// The initial weights and the data batches every backend starts from (docs/design.md §5).
#pragma once

#include "model/graph.hpp"

#include <cstdint>
#include <vector>

namespace harness::data {

using HostTensor = std::vector<float>;

// One buffer per graph tensor, in construction order: conv weights and biases
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)), BN gamma 1, beta 0, running mean 0, running var 1.
std::vector<HostTensor> initial_state(const model::Graph& graph, uint64_t seed);

// `count` distinct batches: inputs U[0,1) named "input.<b>", targets U[0,1) named "target.<b>".
// With `input_block` > 1 every input is constant on input_block x input_block pixel blocks: one
// draw of the stream per block, channel and image, in that order (the config's data.input_block).
struct Batches {
    std::vector<HostTensor> inputs, targets;
};
Batches make_batches(const model::Graph& graph, uint64_t seed, int count, int input_block = 1);

}  // namespace harness::data
