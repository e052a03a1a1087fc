// `harness run --dump DIR`: every initial tensor and batch as a NumPy .npy file, plus index.json
// (name, file, shape, layer, role, order) so an outside implementation can reproduce the step.
#pragma once

#include "data/initial_state.hpp"
#include "model/graph.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace harness::data {

// Writes a little-endian float32 C-order .npy (format version 1.0). Throws on I/O failure.
void write_npy(const std::string& path, const std::vector<int64_t>& shape, const float* data);
// Reads one back (float32, C order only); used by tests and tools.
std::vector<float> read_npy(const std::string& path, std::vector<int64_t>* shape);

void dump(const std::string& dir, const model::Graph& graph, uint64_t seed,
          const std::vector<HostTensor>& state, const Batches& batches);

}  // namespace harness::data
