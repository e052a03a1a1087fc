// `harness run --dump DIR`: every initial tensor and batch as a NumPy .npy file, plus index.json
// (name, file, shape, layer, role, order) so an outside implementation can reproduce the step.
//
// index.json:
//   format        1
//   seed          the generator seed
//   input         {name, shape} of the image batch value; target_shape; batches (their count)
//   tensors       [{name, file, shape, dtype: "float32", kind, layer, role, order}]:
//                 kind "parameter" | "running_stat" (role weight | bias | running_mean |
//                 running_var, layer = the owning layer, order = index in graph.tensors, the
//                 order load_state expects), then "input" / "target" per batch (layer and role
//                 null, order = the batch index)
//   layers        [{name, kind, inputs (value names), output, output_shape, ...}] in execution
//                 order; conv2d adds in_channels, out_channels, kernel, stride, padding, weight,
//                 bias (tensor names or null); batchnorm adds momentum, eps and its four tensor
//                 names; mse_loss adds loss_weight. A layer's output value has the layer's name.
//   optimizer     {type: "rmsprop", variant: "torch" | "tensorflow", learning_rate, alpha, eps,
//                 momentum, weight_decay, initial_square_average}
#pragma once

#include "data/initial_state.hpp"
#include "hb/plugin.h"
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
          const std::vector<HostTensor>& state, const Batches& batches,
          const hb_optimizer& optimizer);

}  // namespace harness::data
