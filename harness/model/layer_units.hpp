// A model's layers as `harness layers` times and checks them, one configuration at a time
// (docs/layers.md): every distinct layer configuration, the number of times the model has it, and
// a training graph of that configuration alone.
#pragma once

#include "model/graph.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace harness::model {

// A layer configuration: one layer, or a batch norm with the ReLU that alone reads its output
// (the pair every backend may fuse, timed as it runs in the model).
struct LayerUnit {
    std::string name;         // "conv3x3/s1/c128-128/64x64", "batchnorm+relu/c256/64x64", ...
    std::string kind;         // "conv2d", "batchnorm+relu", "add2", ...: the first word of name
    std::vector<int> layers;  // the model's layers of its first occurrence, in execution order
    std::vector<std::string> occurrences;  // the first layer's name at every occurrence
    bool reads_model_input = false;  // its input is the model's input, which needs no gradient
    int64_t training_flops = 0;      // per step, whole batch: 3 x forward (Graph's convention)
    int count() const { return static_cast<int>(occurrences.size()); }
};

// The model's layer configurations in the order they first occur.
std::vector<LayerUnit> layer_units(const Graph& model);

// `unit` alone as a training graph: each input of the unit is computed from the graph's input by
// a probe (a 1x1 convolution keeping the channels, named "probe<k>", no bias), so that the unit's
// backward pass computes the gradient of its inputs as it does in the model and the probe's weight
// gradient depends on every element of that gradient; the unit's output feeds an mse_loss. A unit
// that reads the model's input reads the graph's input directly (no gradient, as in the model); an
// mse_loss unit is its own loss. The unit's layers and tensors keep their model names.
Graph unit_graph(const Graph& model, const LayerUnit& unit);

}  // namespace harness::model
