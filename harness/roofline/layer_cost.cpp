#include "roofline/layer_cost.hpp"

namespace harness::roofline {

namespace {

constexpr int64_t kFloat = 4;  // bytes

}  // namespace

Cost& Cost::operator+=(const Cost& other) {
    forward_flops += other.forward_flops;
    backward_flops += other.backward_flops;
    forward_bytes += other.forward_bytes;
    backward_bytes += other.backward_bytes;
    return *this;
}

Cost layer_cost(const model::Graph& graph, const model::Layer& layer) {
    const auto size = [&](int value) {
        return model::elements(graph.values[static_cast<size_t>(value)].shape);
    };
    const auto tensor = [&](int t) {
        return t < 0 ? 0 : graph.tensors[static_cast<size_t>(t)].elements();
    };
    const int64_t x = size(layer.inputs.at(0)), y = size(layer.output);
    const bool input_gradient = layer.inputs.at(0) != graph.input;
    Cost c;
    switch (layer.kind) {
        case model::LayerKind::conv2d: {
            const int64_t w = tensor(layer.weight), b = tensor(layer.bias);
            const int64_t products =
                2 * int64_t{layer.in_channels} * layer.kernel * layer.kernel * y;
            const int64_t bias = b > 0 ? y : 0;
            c.forward_flops = products + bias;
            c.backward_flops = products + bias + (input_gradient ? products : 0);
            c.forward_bytes = (x + w + b + y) * kFloat;
            c.backward_bytes = (y + x + w + b + (input_gradient ? w + x : 0)) * kFloat;
            break;
        }
        case model::LayerKind::batchnorm: {
            const int64_t channels = graph.values[static_cast<size_t>(layer.output)].shape[1];
            c.forward_flops = 8 * x;
            c.backward_flops = 9 * x;
            c.forward_bytes = (x + y + 6 * channels) * kFloat;
            c.backward_bytes = (y + x + (input_gradient ? x : 0) + 3 * channels) * kFloat;
            break;
        }
        case model::LayerKind::relu:
            c.forward_flops = c.backward_flops = x;
            c.forward_bytes = (x + y) * kFloat;
            c.backward_bytes = (y + x + x) * kFloat;
            break;
        case model::LayerKind::maxpool2d:
            c.forward_flops = c.backward_flops = 3 * y;
            c.forward_bytes = (x + y) * kFloat;
            c.backward_bytes = (y + x + x) * kFloat;
            break;
        case model::LayerKind::upsample:
            c.backward_flops = 3 * x;
            c.forward_bytes = (x + y) * kFloat;
            c.backward_bytes = (y + x) * kFloat;
            break;
        case model::LayerKind::add: {
            const auto n = static_cast<int64_t>(layer.inputs.size());
            c.forward_flops = (n - 1) * y;
            c.forward_bytes = (n * x + y) * kFloat;
            break;
        }
        case model::LayerKind::mse_loss:
            c.forward_flops = 3 * x;
            c.backward_flops = 2 * x;
            c.forward_bytes = 2 * x * kFloat;
            c.backward_bytes = 3 * x * kFloat;
            break;
    }
    if (!input_gradient && layer.weight < 0 && layer.bias < 0)
        c.backward_flops = c.backward_bytes = 0;  // a backward pass with nothing to compute
    return c;
}

Cost optimizer_cost(const model::Graph& graph, bool weight_decay, bool momentum) {
    const int64_t p = graph.parameter_count();
    Cost c;
    c.backward_flops = (9 + (weight_decay ? 2 : 0) + (momentum ? 2 : 0)) * p;
    c.backward_bytes = (5 + (momentum ? 2 : 0)) * p * kFloat;
    return c;
}

}  // namespace harness::roofline
