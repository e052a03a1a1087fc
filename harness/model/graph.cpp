#include "model/graph.hpp"

#include <stdexcept>

namespace harness::model {

const char* to_string(LayerKind kind) {
    switch (kind) {
        case LayerKind::conv2d:
            return "conv2d";
        case LayerKind::batchnorm:
            return "batchnorm";
        case LayerKind::relu:
            return "relu";
        case LayerKind::maxpool2d:
            return "maxpool2d";
        case LayerKind::upsample:
            return "upsample";
        case LayerKind::add:
            return "add";
        case LayerKind::mse_loss:
            return "mse_loss";
    }
    return "unknown";
}

int64_t elements(const Shape& s) {
    return s[0] * s[1] * s[2] * s[3];
}

std::string to_string(const Shape& s) {
    return "[" + std::to_string(s[0]) + ", " + std::to_string(s[1]) + ", " + std::to_string(s[2]) +
           ", " + std::to_string(s[3]) + "]";
}

int64_t Tensor::elements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

int64_t Graph::batch() const {
    return values.at(static_cast<size_t>(input)).shape[0];
}

int64_t Graph::parameter_count() const {
    int64_t n = 0;
    for (const Tensor& t : tensors)
        if (t.trainable()) n += t.elements();
    return n;
}

int64_t forward_flops_per_image(const Graph& g, const Layer& l) {
    const Shape& out = g.values[static_cast<size_t>(l.output)].shape;
    const int64_t out_per_image = elements(out) / out[0];
    switch (l.kind) {
        case LayerKind::conv2d: {
            const int64_t positions = out[2] * out[3];
            int64_t f =
                2 * int64_t{l.in_channels} * l.kernel * l.kernel * l.out_channels * positions;
            if (l.bias >= 0) f += l.out_channels * positions;
            return f;
        }
        case LayerKind::batchnorm:
            return 2 * out_per_image;
        case LayerKind::relu:
            return out_per_image;
        case LayerKind::maxpool2d:
            return 3 * out_per_image;
        case LayerKind::upsample:
            return 0;
        case LayerKind::add:
            return static_cast<int64_t>(l.inputs.size() - 1) * out_per_image;
        case LayerKind::mse_loss: {
            const Shape& in = g.values[static_cast<size_t>(l.inputs.at(0))].shape;
            return 3 * (elements(in) / in[0]);
        }
    }
    return 0;
}

int64_t Graph::forward_flops_per_image() const {
    int64_t f = 0;
    for (const Layer& l : layers) f += model::forward_flops_per_image(*this, l);
    return f;
}

int64_t Graph::training_flops_per_step() const {
    return 3 * forward_flops_per_image() * batch();
}

int64_t Graph::activation_bytes() const {
    int64_t n = 0;
    for (const Value& v : values) n += elements(v.shape);
    return 4 * n;
}

int Graph::index_of_layer(const std::string& name) const {
    for (size_t i = 0; i < layers.size(); ++i)
        if (layers[i].name == name) return static_cast<int>(i);
    return -1;
}

const Layer& Graph::layer(const std::string& name) const& {
    const int i = index_of_layer(name);
    if (i < 0) throw std::out_of_range("no layer named '" + name + "' in the graph");
    return layers[static_cast<size_t>(i)];
}

namespace {

hb_layer_kind abi_kind(LayerKind kind) {
    switch (kind) {
        case LayerKind::conv2d:
            return HB_LAYER_CONV2D;
        case LayerKind::batchnorm:
            return HB_LAYER_BATCHNORM;
        case LayerKind::relu:
            return HB_LAYER_RELU;
        case LayerKind::maxpool2d:
            return HB_LAYER_MAXPOOL2D;
        case LayerKind::upsample:
            return HB_LAYER_UPSAMPLE;
        case LayerKind::add:
            return HB_LAYER_ADD;
        case LayerKind::mse_loss:
            return HB_LAYER_MSE_LOSS;
    }
    throw std::logic_error("unknown layer kind");
}

hb_tensor_role abi_role(TensorRole role) {
    switch (role) {
        case TensorRole::weight:
            return HB_ROLE_WEIGHT;
        case TensorRole::bias:
            return HB_ROLE_BIAS;
        case TensorRole::running_mean:
            return HB_ROLE_RUNNING_MEAN;
        case TensorRole::running_var:
            return HB_ROLE_RUNNING_VAR;
    }
    throw std::logic_error("unknown tensor role");
}

int32_t abi_count(size_t n) {
    if (n > static_cast<size_t>(INT32_MAX)) throw std::length_error("graph too large for the ABI");
    return static_cast<int32_t>(n);
}

}  // namespace

AbiGraph::AbiGraph(const Graph& graph) {
    values_.reserve(graph.values.size());
    for (const Value& v : graph.values) {
        hb_value hv{};
        hv.name = v.name.c_str();
        for (size_t d = 0; d < 4; ++d) hv.shape[d] = v.shape[d];
        values_.push_back(hv);
    }

    tensors_.reserve(graph.tensors.size());
    for (const Tensor& t : graph.tensors) {
        if (t.shape.size() > 4) throw std::length_error("tensor '" + t.name + "' has rank > 4");
        hb_tensor ht{};
        ht.name = t.name.c_str();
        ht.layer = t.layer;
        ht.role = abi_role(t.role);
        ht.rank = abi_count(t.shape.size());
        for (size_t d = 0; d < t.shape.size(); ++d) ht.shape[d] = t.shape[d];
        ht.trainable = t.trainable() ? 1 : 0;
        tensors_.push_back(ht);
    }

    size_t total_inputs = 0;
    for (const Layer& l : graph.layers) total_inputs += l.inputs.size();
    inputs_.reserve(total_inputs);  // no reallocation below: the layers point into it
    layers_.reserve(graph.layers.size());
    for (const Layer& l : graph.layers) {
        hb_layer hl{};
        hl.name = l.name.c_str();
        hl.kind = abi_kind(l.kind);
        hl.num_inputs = abi_count(l.inputs.size());
        hl.inputs = inputs_.data() + inputs_.size();
        for (int i : l.inputs) inputs_.push_back(i);
        hl.output = l.output;
        hl.in_channels = l.in_channels;
        hl.out_channels = l.out_channels;
        hl.kernel = l.kernel;
        hl.stride = l.stride;
        hl.padding = l.padding;
        hl.weight = l.weight;
        hl.bias = l.bias;
        hl.running_mean = l.running_mean;
        hl.running_var = l.running_var;
        hl.momentum = l.momentum;
        hl.eps = l.eps;
        hl.loss_weight = l.loss_weight;
        layers_.push_back(hl);
    }

    graph_ = hb_empty_graph();
    graph_.num_values = abi_count(values_.size());
    graph_.values = values_.data();
    graph_.num_layers = abi_count(layers_.size());
    graph_.layers = layers_.data();
    graph_.num_tensors = abi_count(tensors_.size());
    graph_.tensors = tensors_.data();
    graph_.input = graph.input;
    for (size_t d = 0; d < 4; ++d) graph_.target_shape[d] = graph.target_shape[d];
}

}  // namespace harness::model
