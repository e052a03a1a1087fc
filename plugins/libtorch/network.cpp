#include "network.hpp"

#include "hb/graph.hpp"
#include "op_profiler.hpp"

#include <ATen/Functions.h>
#include <ATen/core/Reduction.h>

#include <array>

namespace hb_libtorch {
namespace {

std::string to_string(at::IntArrayRef shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

}  // namespace

Network::Network(const hb_graph& source, const c10::TensorOptions& options,
                 c10::MemoryFormat format) {
    // Autograd sums the gradients of a tensor that several layers use.
    const hb::Graph graph = hb::import_graph(source, {"libtorch", true});
    input_ = graph.input;
    for (int v = 0; v < graph.num_values(); ++v) {
        const hb::Dims& d = graph.values[v];
        value_shapes_.push_back({d.n, d.c, d.h, d.w});
        value_names_.push_back(graph.value_names[v]);
    }
    input_shape_ = value_shapes_[input_];
    target_shape_ = {graph.target.n, graph.target.c, graph.target.h, graph.target.w};

    for (const hb::Tensor& t : graph.tensors) {
        TensorSpec spec{t.name, t.shape, t.trainable, t.layer};
        const c10::MemoryFormat layout =
            t.shape.size() == 4 ? format : c10::MemoryFormat::Contiguous;
        tensors_.push_back(at::empty(spec.shape, options, layout).requires_grad_(spec.trainable));
        specs_.push_back(std::move(spec));
    }

    for (const hb::Layer& source_layer : graph.layers) {
        if (source_layer.kind == HB_LAYER_BATCHNORM &&
            (source_layer.running_mean < 0) != (source_layer.running_var < 0))
            throw hb::Error("layer '" + source_layer.name +
                            "' (batchnorm): it has only one of the two running statistics");
        layers_.emplace_back(source_layer);
    }

    // Which layers read each value, to free activations early and to run a ReLU in place where
    // nothing else reads its input. The producers allowed to be overwritten (batch norm,
    // convolution, add) do not keep their output for their own backward pass.
    const auto values = static_cast<size_t>(graph.num_values());
    std::vector<int> producer(values, -1);
    std::vector<int> readers(values, 0);
    std::vector<int> last_use(values, -1);
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

std::vector<at::Tensor> Network::trainable_tensors() const {
    std::vector<at::Tensor> out;
    for (size_t i = 0; i < tensors_.size(); ++i)
        if (specs_[i].trainable) out.push_back(tensors_[i]);
    return out;
}

std::vector<int32_t> Network::trainable_layers() const {
    std::vector<int32_t> out;
    for (const TensorSpec& spec : specs_)
        if (spec.trainable) out.push_back(spec.layer);
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
            // running_var, exactly as docs/design.md §4 asks.
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

at::Tensor Network::forward(const at::Tensor& input, const at::Tensor& target,
                            OpProfiler* profiler) {
    values_[input_] = input;
    at::Tensor loss;
    for (size_t i = 0; i < layers_.size(); ++i) {
        const Layer& layer = layers_[i];
        if (profiler) profiler->begin(profile::Part::forward, static_cast<int32_t>(i));
        at::Tensor y = run_layer(layer, target);
        if (profiler) profiler->end();
        if (!shapes_checked_) check_output(layer, y);
        if (layer.kind == HB_LAYER_MSE_LOSS) {
            if (profiler) profiler->begin(profile::Part::loss);
            loss = loss.defined() ? loss.add(y) : y;
            if (profiler) profiler->end();
        }
        values_[layer.output] = std::move(y);
        for (int v : layer.released) values_[v].reset();
    }
    shapes_checked_ = true;
    for (at::Tensor& v : values_) v.reset();
    if (!loss.defined()) throw hb::Error("graph: it has no mse_loss layer, so no training loss");
    return loss;
}

}  // namespace hb_libtorch
