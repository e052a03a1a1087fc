#include "plan.hpp"

#include "hb/graph.hpp"

#include <algorithm>

namespace cudnn_backend {
namespace {

Shape shape_of(const hb::Dims& d) {
    return {d.n, d.c, d.h, d.w};
}

hb::Graph read_graph(const hb_graph& source) {
    return hb::import_graph(source, {"cudnn", false});
}

std::vector<int> candidates_of(const hb::Graph& graph) {
    std::vector<int> out;
    for (const auto& [batchnorm, relu] : hb::batchnorm_relu_pairs(graph, hb::uses_of(graph)))
        out.push_back(batchnorm);
    return out;
}

}  // namespace

std::vector<int> fusion_candidates(const hb_graph& source) {
    return candidates_of(read_graph(source));
}

Plan::Plan(const hb_graph& source, const std::set<int>& fuse, Storage storage) : storage_(storage) {
    build(source, [&fuse](const hb::Graph&) { return fuse; });
}

Plan::Plan(const hb_graph& source, Storage storage, const FusionChoice& fuse) : storage_(storage) {
    build(source, [&](const hb::Graph& graph) {
        std::set<int> chosen;
        for (int b : candidates_of(graph))
            if (fuse(layers_[size_t(b)])) chosen.insert(b);
        return chosen;
    });
}

void Plan::build(const hb_graph& source,
                 const std::function<std::set<int>(const hb::Graph&)>& fusions) {
    const hb::Graph graph = read_graph(source);
    input_ = graph.input;
    target_ = shape_of(graph.target);
    read_values(graph);
    read_tensors(graph);
    read_layers(graph);
    apply_fusions(fusions(graph));
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

void Plan::read_values(const hb::Graph& graph) {
    for (int v = 0; v < graph.num_values(); ++v) {
        ValuePlan value;
        value.name = graph.value_names[v];
        value.shape = shape_of(graph.values[v]);
        value.is_input = v == input_;
        values_.push_back(std::move(value));
    }
}

void Plan::read_tensors(const hb::Graph& graph) {
    for (const hb::Tensor& t : graph.tensors) {
        TensorPlan tensor;
        tensor.name = t.name;
        tensor.layer = t.layer;
        tensor.role = t.role;
        tensor.trainable = t.trainable;
        tensor.rank = static_cast<int>(t.shape.size());
        std::copy(t.shape.begin(), t.shape.end(), tensor.shape);
        tensor.elements = t.elements;
        int64_t& block = tensor.trainable ? parameter_floats_ : statistics_floats_;
        tensor.offset = block;
        block = align_up(block + tensor.elements, tensor_alignment);
        tensors_.push_back(std::move(tensor));
    }
}

void Plan::read_layers(const hb::Graph& graph) {
    const int count = graph.num_layers();
    for (int i = 0; i < count; ++i) {
        const hb::Layer& source = graph.layers[i];
        // cuDNN's batch norm always applies a scale and shift and keeps running statistics.
        if (source.kind == HB_LAYER_BATCHNORM &&
            (source.weight < 0 || source.bias < 0 || source.running_mean < 0 ||
             source.running_var < 0))
            throw hb::Error("layer '" + source.name +
                                "' (batchnorm): the cudnn backend needs gamma, beta and both "
                                "running statistics",
                            HB_UNSUPPORTED);
        LayerPlan layer;
        layer.name = source.name;
        layer.kind = source.kind;
        layer.inputs = source.inputs;
        layer.output = source.output;
        layer.in = values_[layer.inputs[0]].shape;
        layer.out = values_[layer.output].shape;
        layer.kernel = static_cast<int>(source.kernel);
        layer.stride = static_cast<int>(source.stride);
        layer.padding = static_cast<int>(source.padding);
        layer.weight = source.weight;
        layer.bias = source.bias;
        layer.running_mean = source.running_mean;
        layer.running_var = source.running_var;
        layer.momentum = source.momentum;
        layer.eps = source.eps;
        layer.loss_weight = source.loss_weight;
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
    const int64_t element = element_bytes(storage_);
    for (int v = 0; v < n; ++v) {
        ValuePlan& value = values_[v];
        if (value.is_input || !value.materialized || writer[v] < 0) continue;
        const int64_t bytes = value.is_loss ? 0 : value.shape.elements() * element;
        if (bytes > 0) value.buffer = add_request(bytes, first[v], last[v], value.name);
        if (value.needs_gradient)
            value.gradient_buffer = add_request(value.shape.elements() * element, gradient_first[v],
                                                gradient_last[v], "d(" + value.name + ")");
    }
    for (LayerPlan& layer : layers_)
        if (layer.kind == HB_LAYER_BATCHNORM)
            layer.saved = add_request(2 * layer.in.c * int64_t(sizeof(float)), layer.forward_time,
                                      layer.backward_time, layer.name + " saved statistics");
}

}  // namespace cudnn_backend
