// The layer graph (hb_graph) copied into owned, checked structures: shapes agree with each layer's
// semantics, tensor references are valid and every value is computed once, before it is used.
#pragma once

#include "hb/plugin.h"

#include <cstdint>
#include <string>
#include <vector>

namespace onednn_backend {

struct Dims {
    int64_t n = 0, c = 0, h = 0, w = 0;
    int64_t elements() const { return n * c * h * w; }
    bool operator==(const Dims& o) const { return n == o.n && c == o.c && h == o.h && w == o.w; }
    bool operator!=(const Dims& o) const { return !(*this == o); }
};
std::string to_string(const Dims& d);

struct Layer {
    std::string name;
    hb_layer_kind kind = HB_LAYER_RELU;
    std::vector<int> inputs;
    int output = -1;
    int64_t kernel = 1, stride = 1, padding = 0;                      // conv2d
    int weight = -1, bias = -1, running_mean = -1, running_var = -1;  // tensor indices or -1
    float momentum = 0.1f, eps = 1e-5f;                               // batchnorm
    double loss_weight = 1;                                           // mse_loss
};

struct TensorSpec {
    std::string name;
    int layer = -1;
    hb_tensor_role role = HB_ROLE_WEIGHT;
    std::vector<int64_t> shape;
    bool trainable = false;
    int64_t elements = 0;
};

struct Graph {
    std::vector<std::string> value_names;
    std::vector<Dims> values;
    std::vector<Layer> layers;  // execution order
    std::vector<TensorSpec> tensors;
    int input = -1;
    Dims target;

    int num_layers() const { return static_cast<int>(layers.size()); }
    int num_values() const { return static_cast<int>(values.size()); }
};

// Throws hb::Error naming the offending layer, value or tensor.
Graph import_graph(const hb_graph& graph);

}  // namespace onednn_backend
