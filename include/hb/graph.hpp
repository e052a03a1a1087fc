// The layer graph a session receives (hb_graph), copied into owned structures and checked: every
// index in range, every value computed once before it is used, shapes that agree with each
// layer's semantics, tensors of the shapes their layers need. A plugin builds its network from
// the result and need not check the C structures itself. Header-only, standard library only.
#pragma once

#include "hb/error.hpp"
#include "hb/plugin.h"
#include "hb/session_desc.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hb {

struct Dims {
    int64_t n = 0, c = 0, h = 0, w = 0;
    int64_t plane() const { return h * w; }
    int64_t elements() const { return n * c * h * w; }
    bool operator==(const Dims& o) const { return n == o.n && c == o.c && h == o.h && w == o.w; }
    bool operator!=(const Dims& o) const { return !(*this == o); }
};

inline std::string to_string(const Dims& d) {
    return "[" + std::to_string(d.n) + ", " + std::to_string(d.c) + ", " + std::to_string(d.h) +
           ", " + std::to_string(d.w) + "]";
}

inline std::string to_string(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

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

struct Tensor {
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
    std::vector<Tensor> tensors;
    int input = -1;
    Dims target;
    int num_layers() const { return static_cast<int>(layers.size()); }
    int num_values() const { return static_cast<int>(values.size()); }
};

struct ImportRules {
    std::string backend;          // named in the message for a layer kind it does not know
    bool shared_tensors = false;  // may two layers use one tensor
};

namespace detail {

class GraphImporter {
public:
    GraphImporter(const hb_graph& source, ImportRules rules)
        : source_(source), rules_(std::move(rules)) {}

    Graph run() {
        check_graph_sizes(source_);
        if (source_.num_values <= 0 || !source_.values) throw Error("graph: it has no values");
        if (source_.input < 0 || source_.input >= source_.num_values)
            throw Error("graph: input value index " + std::to_string(source_.input) +
                        " is out of range");
        if (source_.num_layers < 0 || (source_.num_layers > 0 && !source_.layers) ||
            source_.num_tensors < 0 || (source_.num_tensors > 0 && !source_.tensors))
            throw Error("graph: layer or tensor list is missing");
        graph_.input = source_.input;
        graph_.target = dims_of(source_.target_shape);
        for (int32_t v = 0; v < source_.num_values; ++v) {
            const hb_value value = graph_value(source_, v);
            const std::string name = value.name ? value.name : "value" + std::to_string(v);
            const Dims d = dims_of(value.shape);
            if (d.n <= 0 || d.c <= 0 || d.h <= 0 || d.w <= 0)
                throw Error("graph: value '" + name + "' has shape " + to_string(d));
            graph_.value_names.push_back(name);
            graph_.values.push_back(d);
        }
        for (int32_t i = 0; i < source_.num_tensors; ++i) {
            const hb_tensor t = graph_tensor(source_, i);
            const std::string name = t.name ? t.name : "tensor" + std::to_string(i);
            if (t.rank < 1 || t.rank > 4 || hb::elements(t) <= 0)
                throw Error("graph: tensor '" + name + "' has an invalid shape");
            Tensor tensor;
            tensor.name = name;
            tensor.layer = t.layer;
            tensor.role = t.role;
            tensor.shape.assign(t.shape, t.shape + t.rank);
            tensor.trainable = t.trainable != 0;
            tensor.elements = hb::elements(t);
            graph_.tensors.push_back(std::move(tensor));
        }
        defined_.assign(graph_.values.size(), false);
        is_loss_.assign(graph_.values.size(), false);
        tensor_user_.assign(graph_.tensors.size(), -1);
        defined_[static_cast<size_t>(graph_.input)] = true;
        for (int32_t i = 0; i < source_.num_layers; ++i) import_layer(i);
        return std::move(graph_);
    }

private:
    static Dims dims_of(const int64_t* shape) { return {shape[0], shape[1], shape[2], shape[3]}; }

    void import_layer(int index) {
        const hb_layer s = graph_layer(source_, index);
        Layer layer;
        layer.name = s.name ? s.name : "layer" + std::to_string(index);
        layer.kind = s.kind;
        if (!known_layer_kind(layer.kind))
            throw Error("layer '" + layer.name + "': kind " +
                            std::to_string(static_cast<int>(layer.kind)) +
                            " is not supported by the " + rules_.backend + " backend",
                        HB_UNSUPPORTED);
        auto error = [&](const std::string& what) {
            return Error("layer '" + layer.name + "' (" + layer_kind_name(layer.kind) +
                         "): " + what);
        };
        if (s.num_inputs < 1 || !s.inputs) throw error("it has no inputs");
        for (int32_t k = 0; k < s.num_inputs; ++k) {
            const int v = s.inputs[k];
            if (v < 0 || v >= graph_.num_values())
                throw error("input value index " + std::to_string(v) + " is out of range");
            if (!defined_[static_cast<size_t>(v)])
                throw error("input '" + graph_.value_names[static_cast<size_t>(v)] +
                            "' is not computed before this layer");
            if (is_loss_[static_cast<size_t>(v)])
                throw error("its input '" + graph_.value_names[static_cast<size_t>(v)] +
                            "' is a loss; only the training loss may use it");
            layer.inputs.push_back(v);
        }
        if (s.output < 0 || s.output >= graph_.num_values())
            throw error("output value index " + std::to_string(s.output) + " is out of range");
        if (defined_[static_cast<size_t>(s.output)])
            throw error("output '" + graph_.value_names[static_cast<size_t>(s.output)] +
                        "' is already computed by an earlier layer (values must be distinct)");
        layer.output = s.output;
        if (layer.kind != HB_LAYER_ADD && s.num_inputs != 1)
            throw error("expected 1 input, got " + std::to_string(s.num_inputs));

        const Dims x = graph_.values[static_cast<size_t>(layer.inputs[0])];
        const Dims y = graph_.values[static_cast<size_t>(layer.output)];
        auto expect_output = [&](const Dims& expected) {
            if (y != expected)
                throw error("output shape " + to_string(y) + ", expected " + to_string(expected));
        };
        // Parameters are trained, running statistics are not.
        auto expect_tensor = [&](int t, const char* role, const std::vector<int64_t>& shape,
                                 bool trainable) {
            if (t < 0) return -1;
            if (t >= static_cast<int>(graph_.tensors.size()))
                throw error(std::string(role) + " tensor index " + std::to_string(t) +
                            " is out of range");
            const Tensor& tensor = graph_.tensors[static_cast<size_t>(t)];
            if (tensor.shape != shape)
                throw error(std::string(role) + " '" + tensor.name + "' has shape " +
                            to_string(tensor.shape) + ", expected " + to_string(shape));
            if (tensor.trainable != trainable)
                throw error(std::string(role) + " '" + tensor.name + "' must " +
                            (trainable ? "" : "not ") + "be trainable");
            return t;
        };

        switch (layer.kind) {
            case HB_LAYER_CONV2D: {
                if (s.kernel < 1 || s.stride < 1 || s.padding < 0)
                    throw error("kernel " + std::to_string(s.kernel) + ", stride " +
                                std::to_string(s.stride) + ", padding " +
                                std::to_string(s.padding) + " are not a valid convolution");
                if (x.c != s.in_channels)
                    throw error("input has " + std::to_string(x.c) + " channels, expected " +
                                std::to_string(s.in_channels));
                layer.kernel = s.kernel;
                layer.stride = s.stride;
                layer.padding = s.padding;
                if (x.h + 2 * layer.padding < layer.kernel ||
                    x.w + 2 * layer.padding < layer.kernel)
                    throw error("the kernel is larger than the input");
                const int64_t oh = (x.h + 2 * layer.padding - layer.kernel) / layer.stride + 1;
                const int64_t ow = (x.w + 2 * layer.padding - layer.kernel) / layer.stride + 1;
                expect_output({x.n, s.out_channels, oh, ow});
                if (s.weight < 0) throw error("it has no weight tensor");
                layer.weight = expect_tensor(
                    s.weight, "weight", {s.out_channels, s.in_channels, s.kernel, s.kernel}, true);
                layer.bias = expect_tensor(s.bias, "bias", {s.out_channels}, true);
                break;
            }
            case HB_LAYER_BATCHNORM:
                expect_output(x);
                if (x.n * x.h * x.w < 2)
                    throw error("training-mode batch norm needs more than one value per channel");
                if (!(s.eps > 0) || !(s.momentum >= 0 && s.momentum <= 1))
                    throw error("eps must be positive and momentum in [0, 1]");
                layer.weight = expect_tensor(s.weight, "gamma", {x.c}, true);
                layer.bias = expect_tensor(s.bias, "beta", {x.c}, true);
                layer.running_mean = expect_tensor(s.running_mean, "running mean", {x.c}, false);
                layer.running_var = expect_tensor(s.running_var, "running variance", {x.c}, false);
                layer.momentum = s.momentum;
                layer.eps = s.eps;
                break;
            case HB_LAYER_RELU:
                expect_output(x);
                break;
            case HB_LAYER_MAXPOOL2D:
                if (x.h < 2 || x.w < 2)
                    throw error("input " + to_string(x) + " is smaller than 2x2");
                expect_output({x.n, x.c, x.h / 2, x.w / 2});
                break;
            case HB_LAYER_UPSAMPLE:
                expect_output({x.n, x.c, 2 * x.h, 2 * x.w});
                break;
            case HB_LAYER_ADD:
                for (int v : layer.inputs)
                    if (graph_.values[static_cast<size_t>(v)] != x)
                        throw error("inputs have different shapes " + to_string(x) + " and " +
                                    to_string(graph_.values[static_cast<size_t>(v)]));
                expect_output(x);
                break;
            case HB_LAYER_MSE_LOSS:
                if (x != graph_.target)
                    throw error("input shape " + to_string(x) + " differs from the target shape " +
                                to_string(graph_.target));
                expect_output({1, 1, 1, 1});
                layer.loss_weight = s.loss_weight;
                break;
        }
        for (int t : {layer.weight, layer.bias, layer.running_mean, layer.running_var}) {
            if (t < 0) continue;
            int& user = tensor_user_[static_cast<size_t>(t)];
            if (user >= 0 && !rules_.shared_tensors)
                throw Error("layer '" + layer.name + "': tensor '" +
                                graph_.tensors[static_cast<size_t>(t)].name +
                                "' is already used by layer '" +
                                graph_.layers[static_cast<size_t>(user)].name +
                                "'; shared tensors are not supported by the " + rules_.backend +
                                " backend",
                            HB_UNSUPPORTED);
            user = index;
        }
        defined_[static_cast<size_t>(layer.output)] = true;
        is_loss_[static_cast<size_t>(layer.output)] = layer.kind == HB_LAYER_MSE_LOSS;
        graph_.layers.push_back(std::move(layer));
    }

    const hb_graph& source_;
    ImportRules rules_;
    Graph graph_;
    std::vector<bool> defined_, is_loss_;
    std::vector<int> tensor_user_;
};

}  // namespace detail

// Throws hb::Error naming the offending layer, value or tensor (HB_UNSUPPORTED for a layer kind
// this SDK does not know, or a shared tensor the rules do not allow).
inline Graph import_graph(const hb_graph& graph, const ImportRules& rules) {
    return detail::GraphImporter(graph, rules).run();
}

// Where a value is read: a layer and the input slot it reads it in.
struct Use {
    int layer = -1;
    int slot = -1;
};

// Per value, every use of it, in execution order.
inline std::vector<std::vector<Use>> uses_of(const Graph& graph) {
    std::vector<std::vector<Use>> uses(graph.values.size());
    for (int l = 0; l < graph.num_layers(); ++l) {
        const Layer& layer = graph.layers[static_cast<size_t>(l)];
        for (int s = 0; s < static_cast<int>(layer.inputs.size()); ++s)
            uses[static_cast<size_t>(layer.inputs[static_cast<size_t>(s)])].push_back({l, s});
    }
    return uses;
}

// The batch norms a backend may fuse with the ReLU after them: those whose output that ReLU
// alone reads. Pairs of layer indices (batch norm, ReLU), in execution order.
inline std::vector<std::pair<int, int>> batchnorm_relu_pairs(
    const Graph& graph, const std::vector<std::vector<Use>>& uses) {
    std::vector<std::pair<int, int>> pairs;
    for (int l = 0; l < graph.num_layers(); ++l) {
        const Layer& layer = graph.layers[static_cast<size_t>(l)];
        if (layer.kind != HB_LAYER_BATCHNORM) continue;
        const std::vector<Use>& users = uses[static_cast<size_t>(layer.output)];
        if (users.size() == 1 &&
            graph.layers[static_cast<size_t>(users[0].layer)].kind == HB_LAYER_RELU)
            pairs.emplace_back(l, users[0].layer);
    }
    return pairs;
}

}  // namespace hb
