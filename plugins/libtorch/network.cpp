#include "network.hpp"

#include "hb/plugin.hpp"

#include <ATen/Functions.h>
#include <ATen/core/Reduction.h>

#include <array>

namespace libtorch_backend {
namespace {

std::string to_string(at::IntArrayRef shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

}  // namespace

Network::Network(const hb_graph& graph, const c10::TensorOptions& options,
                 c10::MemoryFormat format) {
    if (graph.num_values <= 0 || !graph.values) throw hb::Error("graph: it has no values");
    if (graph.input < 0 || graph.input >= graph.num_values)
        throw hb::Error("graph: input value index " + std::to_string(graph.input) +
                        " is out of range");
    if (graph.num_layers < 0 || (graph.num_layers > 0 && !graph.layers) || graph.num_tensors < 0 ||
        (graph.num_tensors > 0 && !graph.tensors))
        throw hb::Error("graph: layer or tensor list is missing");

    input_ = graph.input;
    for (int32_t v = 0; v < graph.num_values; ++v) {
        value_shapes_.emplace_back(graph.values[v].shape, graph.values[v].shape + 4);
        value_names_.emplace_back(graph.values[v].name ? graph.values[v].name
                                                       : "value" + std::to_string(v));
    }
    input_shape_ = value_shapes_[input_];
    target_shape_.assign(graph.target_shape, graph.target_shape + 4);

    for (int32_t i = 0; i < graph.num_tensors; ++i) {
        const hb_tensor& t = graph.tensors[i];
        if (t.rank < 1 || t.rank > 4 || hb::elements(t) <= 0)
            throw hb::Error("graph: tensor '" + std::string(t.name) + "' has an invalid shape");
        TensorSpec spec{t.name, std::vector<int64_t>(t.shape, t.shape + t.rank), t.trainable != 0};
        const c10::MemoryFormat layout = t.rank == 4 ? format : c10::MemoryFormat::Contiguous;
        tensors_.push_back(at::empty(spec.shape, options, layout).requires_grad_(spec.trainable));
        specs_.push_back(std::move(spec));
    }

    std::vector<bool> defined(static_cast<size_t>(graph.num_values), false);
    defined[input_] = true;
    for (int32_t i = 0; i < graph.num_layers; ++i) {
        Layer layer = check_layer(graph, i);
        for (int v : layer.inputs)
            if (!defined[v])
                throw hb::Error("layer '" + layer.name + "': input '" + value_names_[v] +
                                "' is not computed before this layer");
        if (defined[layer.output])
            throw hb::Error("layer '" + layer.name + "': output '" + value_names_[layer.output] +
                            "' is already computed by an earlier layer (values must be distinct)");
        defined[layer.output] = true;
        layers_.push_back(std::move(layer));
    }

    // Which layers read each value, to free activations early and to run a ReLU in place where
    // nothing else reads its input. The producers allowed to be overwritten (batch norm,
    // convolution, add) do not keep their output for their own backward pass.
    std::vector<int> producer(static_cast<size_t>(graph.num_values), -1);
    std::vector<int> readers(static_cast<size_t>(graph.num_values), 0);
    std::vector<int> last_use(static_cast<size_t>(graph.num_values), -1);
    for (size_t i = 0; i < layers_.size(); ++i) {
        producer[layers_[i].output] = static_cast<int>(i);
        for (int v : layers_[i].inputs) {
            ++readers[v];
            last_use[v] = static_cast<int>(i);
        }
    }
    for (size_t i = 0; i < layers_.size(); ++i) {
        Layer& layer = layers_[i];
        if (layer.kind == HB_LAYER_RELU) {
            const int v = layer.inputs[0];
            const int p = producer[v];
            layer.in_place =
                v != input_ && readers[v] == 1 && p >= 0 &&
                (layers_[p].kind == HB_LAYER_BATCHNORM || layers_[p].kind == HB_LAYER_CONV2D ||
                 layers_[p].kind == HB_LAYER_ADD);
        }
        for (int v : layer.inputs)
            if (last_use[v] == static_cast<int>(i) && v != input_) layer.released.push_back(v);
    }
    values_.resize(value_shapes_.size());
}

Network::Layer Network::check_layer(const hb_graph& graph, int index) const {
    const hb_layer& source = graph.layers[index];
    Layer layer;
    layer.name = source.name ? source.name : "layer" + std::to_string(index);
    layer.kind = source.kind;
    auto error = [&](const std::string& what) {
        return hb::Error("layer '" + layer.name + "' (" + hb::layer_kind_name(layer.kind) +
                         "): " + what);
    };
    if (source.num_inputs < 1 || !source.inputs) throw error("it has no inputs");
    for (int32_t k = 0; k < source.num_inputs; ++k) {
        const int v = source.inputs[k];
        if (v < 0 || v >= graph.num_values)
            throw error("input value index " + std::to_string(v) + " is out of range");
        layer.inputs.push_back(v);
    }
    if (source.output < 0 || source.output >= graph.num_values)
        throw error("output value index " + std::to_string(source.output) + " is out of range");
    layer.output = source.output;
    if (layer.kind != HB_LAYER_ADD && source.num_inputs != 1)
        throw error("expected 1 input, got " + std::to_string(source.num_inputs));

    auto tensor = [&](int i, const char* role, const std::vector<int64_t>& shape) {
        if (i < 0) return -1;
        if (i >= graph.num_tensors)
            throw error(std::string(role) + " tensor index " + std::to_string(i) +
                        " is out of range");
        if (specs_[i].shape != shape)
            throw error(std::string(role) + " '" + specs_[i].name + "' has shape " +
                        to_string(specs_[i].shape) + ", expected " + to_string(shape));
        return i;
    };
    const int64_t channels = value_shapes_[layer.inputs[0]][1];
    switch (layer.kind) {
        case HB_LAYER_CONV2D:
            if (source.kernel < 1 || source.stride < 1 || source.padding < 0)
                throw error("kernel " + std::to_string(source.kernel) + ", stride " +
                            std::to_string(source.stride) + ", padding " +
                            std::to_string(source.padding) + " are not a valid convolution");
            if (channels != source.in_channels)
                throw error("input has " + std::to_string(channels) + " channels, expected " +
                            std::to_string(source.in_channels));
            if (source.weight < 0) throw error("it has no weight tensor");
            layer.weight =
                tensor(source.weight, "weight",
                       {source.out_channels, source.in_channels, source.kernel, source.kernel});
            layer.bias = tensor(source.bias, "bias", {source.out_channels});
            layer.stride = source.stride;
            layer.padding = source.padding;
            break;
        case HB_LAYER_BATCHNORM:
            if (!(source.eps > 0) || !(source.momentum >= 0 && source.momentum <= 1))
                throw error("eps must be positive and momentum in [0, 1]");
            layer.weight = tensor(source.weight, "gamma", {channels});
            layer.bias = tensor(source.bias, "beta", {channels});
            layer.running_mean = tensor(source.running_mean, "running mean", {channels});
            layer.running_var = tensor(source.running_var, "running variance", {channels});
            if ((layer.running_mean < 0) != (layer.running_var < 0))
                throw error("it has only one of the two running statistics");
            layer.momentum = source.momentum;
            layer.eps = source.eps;
            break;
        case HB_LAYER_MSE_LOSS:
            if (value_shapes_[layer.inputs[0]] != target_shape_)
                throw error("input shape " + to_string(value_shapes_[layer.inputs[0]]) +
                            " differs from the target's " + to_string(target_shape_));
            layer.loss_weight = source.loss_weight;
            break;
        case HB_LAYER_RELU:
        case HB_LAYER_MAXPOOL2D:
        case HB_LAYER_UPSAMPLE:
        case HB_LAYER_ADD:
            break;
        default:
            throw error("unknown layer kind " + std::to_string(static_cast<int>(layer.kind)));
    }
    return layer;
}

std::vector<at::Tensor> Network::trainable_tensors() const {
    std::vector<at::Tensor> out;
    for (size_t i = 0; i < tensors_.size(); ++i)
        if (specs_[i].trainable) out.push_back(tensors_[i]);
    return out;
}

int Network::inplace_relus() const {
    int n = 0;
    for (const Layer& layer : layers_) n += layer.in_place ? 1 : 0;
    return n;
}

at::Tensor Network::run_layer(const Layer& layer, const at::Tensor& target) {
    const at::Tensor& x = values_[layer.inputs[0]];
    auto optional = [&](int i) { return i < 0 ? at::Tensor() : tensors_[i]; };
    switch (layer.kind) {
        case HB_LAYER_CONV2D: {
            const std::array<int64_t, 2> stride{layer.stride, layer.stride};
            const std::array<int64_t, 2> padding{layer.padding, layer.padding};
            if (layer.bias < 0) return at::conv2d(x, tensors_[layer.weight], {}, stride, padding);
            return at::conv2d(x, tensors_[layer.weight], tensors_[layer.bias], stride, padding);
        }
        case HB_LAYER_BATCHNORM:
            // Training mode: the batch's biased variance normalises, the unbiased one updates
            // running_var, exactly as DESIGN §4 asks.
            return at::batch_norm(x, optional(layer.weight), optional(layer.bias),
                                  optional(layer.running_mean), optional(layer.running_var),
                                  /*training=*/true, layer.momentum, layer.eps,
                                  /*cudnn_enabled=*/true);
        case HB_LAYER_RELU:
            return layer.in_place ? at::relu_(values_[layer.inputs[0]]) : at::relu(x);
        case HB_LAYER_MAXPOOL2D: {
            // With a gradient to compute, ATen takes the kernel that records the index of the
            // first maximum of each window, which is where the backward pass sends the gradient.
            const std::array<int64_t, 2> window{2, 2};
            return at::max_pool2d(x, window, window);
        }
        case HB_LAYER_UPSAMPLE: {
            const std::array<int64_t, 2> size{x.size(2) * 2, x.size(3) * 2};
            return at::upsample_nearest2d(x, size);
        }
        case HB_LAYER_ADD: {
            if (layer.inputs.size() == 1) return x.clone();
            at::Tensor sum = at::add(x, values_[layer.inputs[1]]);
            for (size_t k = 2; k < layer.inputs.size(); ++k) sum.add_(values_[layer.inputs[k]]);
            return sum;
        }
        case HB_LAYER_MSE_LOSS: {
            at::Tensor loss = at::mse_loss(x, target, at::Reduction::Mean);
            return layer.loss_weight == 1 ? loss : loss.mul(layer.loss_weight);
        }
    }
    throw hb::Error("layer '" + layer.name + "': unknown layer kind");
}

void Network::check_output(const Layer& layer, const at::Tensor& y) const {
    if (layer.kind == HB_LAYER_MSE_LOSS) return;
    const std::vector<int64_t>& expected = value_shapes_[layer.output];
    if (y.sizes() != at::IntArrayRef(expected))
        throw hb::Error("layer '" + layer.name + "' (" + hb::layer_kind_name(layer.kind) +
                        "): LibTorch computed an output of shape " + to_string(y.sizes()) +
                        ", the graph declares " + to_string(expected));
}

at::Tensor Network::forward(const at::Tensor& input, const at::Tensor& target) {
    values_[input_] = input;
    at::Tensor loss;
    for (const Layer& layer : layers_) {
        at::Tensor y = run_layer(layer, target);
        if (!shapes_checked_) check_output(layer, y);
        if (layer.kind == HB_LAYER_MSE_LOSS) loss = loss.defined() ? loss.add(y) : y;
        values_[layer.output] = std::move(y);
        for (int v : layer.released) values_[v].reset();
    }
    shapes_checked_ = true;
    for (at::Tensor& v : values_) v.reset();
    if (!loss.defined()) throw hb::Error("graph: it has no mse_loss layer, so no training loss");
    return loss;
}

}  // namespace libtorch_backend
