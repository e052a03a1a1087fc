#include "plan.hpp"

#include "hb/plugin.hpp"

#include <algorithm>

namespace cudnn_backend {
namespace {

Shape shape_of(const int64_t* s) {
    return {s[0], s[1], s[2], s[3]};
}

std::string name_of(const char* name) {
    return name ? name : "(unnamed)";
}

std::string to_string(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

int64_t conv_output_size(int64_t input, int64_t kernel, int64_t stride, int64_t padding) {
    return (input + 2 * padding - kernel) / stride + 1;
}

}  // namespace

std::string to_string(const Shape& s) {
    return to_string(std::vector<int64_t>{s.n, s.c, s.h, s.w});
}

std::vector<int> fusion_candidates(const hb_graph& graph) {
    std::vector<std::vector<int>> consumers(static_cast<size_t>(std::max(graph.num_values, 0)));
    for (int32_t i = 0; i < graph.num_layers; ++i)
        for (int32_t k = 0; k < graph.layers[i].num_inputs; ++k) {
            const int v = graph.layers[i].inputs[k];
            if (v >= 0 && v < graph.num_values) consumers[v].push_back(i);
        }
    std::vector<int> out;
    for (int32_t i = 0; i < graph.num_layers; ++i) {
        const hb_layer& bn = graph.layers[i];
        if (bn.kind != HB_LAYER_BATCHNORM || bn.output < 0 || bn.output >= graph.num_values)
            continue;
        const std::vector<int>& users = consumers[bn.output];
        if (users.size() != 1 || users[0] <= i) continue;
        const hb_layer& relu = graph.layers[users[0]];
        if (relu.kind == HB_LAYER_RELU && relu.num_inputs == 1) out.push_back(i);
    }
    return out;
}

Plan::Plan(const hb_graph& graph, const std::set<int>& fuse) {
    if (graph.num_values <= 0 || !graph.values || graph.num_layers < 0 ||
        (graph.num_layers > 0 && !graph.layers) || graph.num_tensors < 0 ||
        (graph.num_tensors > 0 && !graph.tensors))
        throw hb::Error("graph: its value, layer or tensor list is missing");
    if (graph.input < 0 || graph.input >= graph.num_values)
        throw hb::Error("graph: input value index " + std::to_string(graph.input) +
                        " is out of range");
    input_ = graph.input;
    target_ = shape_of(graph.target_shape);
    read_values(graph);
    read_tensors(graph);
    read_layers(graph);
    apply_fusions(fuse);
    plan_gradients();
    plan_buffers();
}

int Plan::fusions() const {
    return static_cast<int>(std::count_if(layers_.begin(), layers_.end(),
                                          [](const LayerPlan& l) { return l.fused_relu; }));
}

int Plan::add_request(int64_t bytes, int first, int last, const std::string& what) {
    requests_.push_back({bytes, first, last, what});
    return static_cast<int>(requests_.size()) - 1;
}

void Plan::read_values(const hb_graph& graph) {
    for (int32_t v = 0; v < graph.num_values; ++v) {
        ValuePlan value;
        value.name = name_of(graph.values[v].name);
        value.shape = shape_of(graph.values[v].shape);
        const Shape& d = value.shape;
        if (d.n <= 0 || d.c <= 0 || d.h <= 0 || d.w <= 0)
            throw hb::Error("graph: value '" + value.name + "' has shape " + to_string(d));
        value.is_input = v == input_;
        values_.push_back(std::move(value));
    }
}

void Plan::read_tensors(const hb_graph& graph) {
    for (int32_t i = 0; i < graph.num_tensors; ++i) {
        const hb_tensor& t = graph.tensors[i];
        TensorPlan tensor;
        tensor.name = name_of(t.name);
        if (t.rank < 1 || t.rank > 4 || hb::elements(t) <= 0)
            throw hb::Error("graph: tensor '" + tensor.name + "' has an invalid shape");
        tensor.layer = t.layer;
        tensor.role = t.role;
        tensor.trainable = t.trainable != 0;
        tensor.rank = t.rank;
        for (int k = 0; k < t.rank; ++k) tensor.shape[k] = t.shape[k];
        tensor.elements = hb::elements(t);
        int64_t& block = tensor.trainable ? parameter_floats_ : statistics_floats_;
        tensor.offset = block;
        block = align_up(block + tensor.elements, tensor_alignment);
        tensors_.push_back(std::move(tensor));
    }
}

void Plan::read_layers(const hb_graph& graph) {
    std::vector<bool> defined(values_.size(), false);
    std::vector<int> tensor_users(tensors_.size(), 0);
    defined[input_] = true;
    const int count = graph.num_layers;
    for (int32_t i = 0; i < count; ++i) {
        const hb_layer& source = graph.layers[i];
        LayerPlan layer;
        layer.name = source.name ? source.name : "layer " + std::to_string(i);
        layer.kind = source.kind;
        if (!hb::known_layer_kind(layer.kind))
            throw hb::Error("layer '" + layer.name + "': kind " +
                                std::to_string(static_cast<int>(layer.kind)) +
                                " is not supported by the cudnn backend",
                            HB_UNSUPPORTED);
        check_layer(graph, source, layer, defined);
        for (int v : layer.inputs)
            if (values_[v].is_loss)
                throw hb::Error("layer '" + layer.name + "': its input '" + values_[v].name +
                                "' is a loss; only the training loss may use it");
        for (int t : {layer.weight, layer.bias, layer.running_mean, layer.running_var})
            if (t >= 0 && ++tensor_users[t] > 1)
                throw hb::Error("layer '" + layer.name + "': tensor '" + tensors_[t].name +
                                    "' is shared with another layer, which the cudnn backend "
                                    "does not support",
                                HB_UNSUPPORTED);
        defined[layer.output] = true;
        values_[layer.output].producer = i;
        values_[layer.output].is_loss = layer.kind == HB_LAYER_MSE_LOSS;
        for (int v : layer.inputs) values_[v].consumers.push_back(i);
        if (layer.kind == HB_LAYER_MSE_LOSS) layer.loss_slot = loss_count_++;
        layer.writes = layer.output;
        layer.forward_time = i;
        layer.backward_time = 2 * count - 1 - i;
        layers_.push_back(std::move(layer));
    }
}

void Plan::check_layer(const hb_graph& graph, const hb_layer& source, LayerPlan& layer,
                       const std::vector<bool>& defined) const {
    auto error = [&](const std::string& what) {
        return hb::Error("layer '" + layer.name + "' (" + hb::layer_kind_name(layer.kind) +
                         "): " + what);
    };
    if (source.num_inputs < 1 || !source.inputs) throw error("it has no inputs");
    for (int32_t k = 0; k < source.num_inputs; ++k) {
        const int v = source.inputs[k];
        if (v < 0 || v >= graph.num_values)
            throw error("input value index " + std::to_string(v) + " is out of range");
        if (!defined[v])
            throw error("input '" + values_[v].name + "' is not computed before this layer");
        layer.inputs.push_back(v);
    }
    const int out = source.output;
    if (out < 0 || out >= graph.num_values)
        throw error("output value index " + std::to_string(out) + " is out of range");
    if (defined[out])
        throw error("output '" + values_[out].name +
                    "' is already computed by an earlier layer (values must be distinct)");
    layer.output = out;
    if (layer.kind != HB_LAYER_ADD && source.num_inputs != 1)
        throw error("expected 1 input, got " + std::to_string(source.num_inputs));
    const Shape x = values_[layer.inputs[0]].shape;
    const Shape y = values_[out].shape;
    layer.in = x;
    layer.out = y;
    auto expect_output = [&](const Shape& expected) {
        if (y != expected)
            throw error("output shape " + to_string(y) + ", expected " + to_string(expected));
    };
    auto expect_tensor = [&](int index, const char* role, const std::vector<int64_t>& shape) {
        if (index < 0) return -1;
        if (index >= graph.num_tensors)
            throw error(std::string(role) + " tensor index " + std::to_string(index) +
                        " is out of range");
        const TensorPlan& t = tensors_[index];
        const std::vector<int64_t> actual(t.shape, t.shape + t.rank);
        if (actual != shape)
            throw error(std::string(role) + " '" + t.name + "' has shape " + to_string(actual) +
                        ", expected " + to_string(shape));
        return index;
    };

    switch (layer.kind) {
        case HB_LAYER_CONV2D: {
            if (source.kernel < 1 || source.stride < 1 || source.padding < 0)
                throw error("kernel " + std::to_string(source.kernel) + ", stride " +
                            std::to_string(source.stride) + ", padding " +
                            std::to_string(source.padding) + " are not a valid convolution");
            if (x.c != source.in_channels)
                throw error("input has " + std::to_string(x.c) + " channels, expected " +
                            std::to_string(source.in_channels));
            const int64_t k = source.kernel;
            const int64_t oh = conv_output_size(x.h, k, source.stride, source.padding);
            const int64_t ow = conv_output_size(x.w, k, source.stride, source.padding);
            if (oh < 1 || ow < 1) throw error("the kernel is larger than the input");
            expect_output({x.n, source.out_channels, oh, ow});
            if (source.weight < 0) throw error("it has no weight tensor");
            layer.weight = expect_tensor(source.weight, "weight",
                                         {source.out_channels, source.in_channels, k, k});
            if (!tensors_[layer.weight].trainable) throw error("its weight is not trainable");
            layer.bias = expect_tensor(source.bias, "bias", {source.out_channels});
            if (layer.bias >= 0 && !tensors_[layer.bias].trainable)
                throw error("its bias is not trainable");
            layer.kernel = source.kernel;
            layer.stride = source.stride;
            layer.padding = source.padding;
            break;
        }
        case HB_LAYER_BATCHNORM:
            expect_output(x);
            if (x.n * x.plane() < 2)
                throw error("training-mode batch norm needs more than one value per channel");
            if (!(source.eps > 0) || !(source.momentum >= 0 && source.momentum <= 1))
                throw error("eps must be positive and momentum in [0, 1]");
            // cuDNN always applies a scale and shift and keeps running statistics.
            if (source.weight < 0 || source.bias < 0 || source.running_mean < 0 ||
                source.running_var < 0)
                throw hb::Error("layer '" + layer.name +
                                    "' (batchnorm): the cudnn backend needs gamma, beta and both "
                                    "running statistics",
                                HB_UNSUPPORTED);
            layer.weight = expect_tensor(source.weight, "gamma", {x.c});
            layer.bias = expect_tensor(source.bias, "beta", {x.c});
            layer.running_mean = expect_tensor(source.running_mean, "running mean", {x.c});
            layer.running_var = expect_tensor(source.running_var, "running variance", {x.c});
            if (!tensors_[layer.weight].trainable || !tensors_[layer.bias].trainable ||
                tensors_[layer.running_mean].trainable || tensors_[layer.running_var].trainable)
                throw error("gamma and beta must be trainable, running statistics not");
            layer.momentum = source.momentum;
            layer.eps = source.eps;
            break;
        case HB_LAYER_RELU:
            expect_output(x);
            break;
        case HB_LAYER_MAXPOOL2D:
            if (x.h < 2 || x.w < 2) throw error("input " + to_string(x) + " is smaller than 2x2");
            expect_output({x.n, x.c, x.h / 2, x.w / 2});
            break;
        case HB_LAYER_UPSAMPLE:
            expect_output({x.n, x.c, 2 * x.h, 2 * x.w});
            break;
        case HB_LAYER_ADD:
            for (int v : layer.inputs)
                if (values_[v].shape != x)
                    throw error("inputs have different shapes " + to_string(x) + " and " +
                                to_string(values_[v].shape));
            expect_output(x);
            break;
        case HB_LAYER_MSE_LOSS:
            if (x != target_)
                throw error("input shape " + to_string(x) + " differs from the target shape " +
                            to_string(target_));
            expect_output({1, 1, 1, 1});
            layer.loss_weight = source.loss_weight;
            break;
    }
}

void Plan::apply_fusions(const std::set<int>& fuse) {
    if (fuse.empty()) return;
    for (int b : fuse) {
        if (b < 0 || b >= static_cast<int>(layers_.size()) || layers_[b].kind != HB_LAYER_BATCHNORM)
            throw hb::Error("BN+ReLU fusion: layer " + std::to_string(b) + " is not a batchnorm");
        ValuePlan& between = values_[layers_[b].output];
        if (between.consumers.size() != 1 || between.consumers[0] <= b ||
            layers_[between.consumers[0]].kind != HB_LAYER_RELU)
            throw hb::Error("BN+ReLU fusion: the output of '" + layers_[b].name +
                            "' does not feed one ReLU only");
        LayerPlan& relu = layers_[between.consumers[0]];
        layers_[b].fused_relu = true;
        layers_[b].writes = relu.output;
        relu.absorbed = true;
        between.materialized = false;
    }
}

void Plan::plan_gradients() {
    for (ValuePlan& v : values_) v.needs_gradient = !v.is_input && !v.is_loss && v.materialized;
    std::vector<bool> written(values_.size(), false);
    for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) {
        LayerPlan& layer = *it;
        layer.input_gradient.assign(layer.inputs.size(), false);
        layer.accumulate.assign(layer.inputs.size(), false);
        if (layer.absorbed) continue;
        layer.zero_output_gradient = values_[layer.writes].needs_gradient && !written[layer.writes];
        for (size_t k = 0; k < layer.inputs.size(); ++k) {
            const int v = layer.inputs[k];
            if (!values_[v].needs_gradient) continue;
            layer.input_gradient[k] = true;
            layer.accumulate[k] = written[v];
            written[v] = true;
        }
    }
}

void Plan::plan_buffers() {
    const int n = static_cast<int>(values_.size());
    std::vector<int> writer(n, -1), first(n, -1), last(n, -1);
    std::vector<int> gradient_first(n, -1), gradient_last(n, -1);
    auto need = [&](std::vector<int>& until, int v, int time) {
        until[v] = std::max(until[v], time);
    };
    for (int i = 0; i < static_cast<int>(layers_.size()); ++i) {
        const LayerPlan& layer = layers_[i];
        if (layer.absorbed) continue;
        writer[layer.writes] = i;
        first[layer.writes] = layer.forward_time;
        need(last, layer.writes, layer.forward_time);
        for (int v : layer.inputs) need(last, v, layer.forward_time);
        switch (layer.kind) {
            case HB_LAYER_CONV2D:
            case HB_LAYER_MAXPOOL2D:
            case HB_LAYER_MSE_LOSS:
                need(last, layer.inputs[0], layer.backward_time);
                break;
            case HB_LAYER_BATCHNORM:
                need(last, layer.inputs[0], layer.backward_time);
                if (layer.fused_relu) need(last, layer.writes, layer.backward_time);
                break;
            case HB_LAYER_RELU:
                need(last, layer.writes, layer.backward_time);
                break;
            case HB_LAYER_UPSAMPLE:
            case HB_LAYER_ADD:
                break;
        }
        for (size_t k = 0; k < layer.inputs.size(); ++k) {
            if (!layer.input_gradient[k]) continue;
            const int v = layer.inputs[k];
            gradient_first[v] = gradient_first[v] < 0
                                    ? layer.backward_time
                                    : std::min(gradient_first[v], layer.backward_time);
        }
        if (values_[layer.writes].needs_gradient) {
            gradient_last[layer.writes] = layer.backward_time;
            if (layer.zero_output_gradient) gradient_first[layer.writes] = layer.backward_time;
        }
    }
    for (int v = 0; v < n; ++v) {
        ValuePlan& value = values_[v];
        if (value.is_input || !value.materialized || writer[v] < 0) continue;
        const int64_t bytes = value.is_loss ? 0 : value.shape.elements() * int64_t(sizeof(float));
        if (bytes > 0) value.buffer = add_request(bytes, first[v], last[v], value.name);
        if (value.needs_gradient)
            value.gradient_buffer =
                add_request(value.shape.elements() * int64_t(sizeof(float)), gradient_first[v],
                            gradient_last[v], "d(" + value.name + ")");
    }
    for (LayerPlan& layer : layers_)
        if (layer.kind == HB_LAYER_BATCHNORM)
            layer.saved = add_request(2 * layer.in.c * int64_t(sizeof(float)), layer.forward_time,
                                      layer.backward_time, layer.name + " saved statistics");
}

}  // namespace cudnn_backend
