#include "plan.hpp"

#include "hb/graph.hpp"
#include "hb/topology.hpp"

#include <algorithm>

namespace hb_cudnn {
namespace {

Shape shape_of(const hb::Dims& d) {
    return {d.n, d.c, d.h, d.w};
}

hb::Graph read_graph(const hb_graph& source) {
    return hb::import_graph(source, {"cudnn", false});
}

}  // namespace

std::vector<int> fusion_candidates(const hb_graph& source) {
    return hb::fusable_batchnorms(read_graph(source));
}

Plan::Plan(const hb_graph& source, const std::set<int>& fuse, Storage storage, bool input_gradient)
    : storage_(storage), input_gradient_(input_gradient) {
    build(source, [&fuse](const hb::Graph&) { return fuse; });
}

Plan::Plan(const hb_graph& source, Storage storage, const FusionChoice& fuse, bool input_gradient)
    : storage_(storage), input_gradient_(input_gradient) {
    build(source, [&](const hb::Graph& graph) {
        std::set<int> chosen;
        for (int b : hb::fusable_batchnorms(graph))
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
    const std::set<int> fused = fusions(graph);
    const hb::Topology topology = hb::analyse(graph, {fused.begin(), fused.end()}, input_gradient_);
    apply_topology(graph, topology);
    plan_gradients(graph, topology);
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
        LayerPlan layer(source);
        layer.in = values_[layer.inputs[0]].shape;
        layer.out = values_[layer.output].shape;
        values_[layer.output].is_loss = layer.kind == HB_LAYER_MSE_LOSS;
        if (layer.kind == HB_LAYER_MSE_LOSS) layer.loss_slot = loss_count_++;
        layer.writes = layer.output;
        layer.forward_time = i;
        layer.backward_time = 2 * count - 1 - i;
        layers_.push_back(std::move(layer));
    }
}

void Plan::apply_topology(const hb::Graph& graph, const hb::Topology& topology) {
    for (size_t v = 0; v < values_.size(); ++v)
        for (const hb::Use& use : topology.uses[v]) values_[v].consumers.push_back(use.layer);
    for (size_t l = 0; l < layers_.size(); ++l) {
        LayerPlan& layer = layers_[l];
        layer.fused_relu = topology.fused_relu[l] >= 0;
        layer.absorbed = topology.absorbed[l];
        layer.writes = topology.output[l];
        if (layer.fused_relu) values_[size_t(graph.layers[l].output)].materialized = false;
    }
}

// Every backward operation of this backend adds into a gradient buffer in place (cuDNN's blend
// factors and the own kernels' `accumulate`), so the first contribution to a gradient writes it
// and every later one adds to it.
void Plan::plan_gradients(const hb::Graph& graph, const hb::Topology& topology) {
    hb::GradientRules rules;
    rules.adds_in_place = [](hb_layer_kind) { return true; };
    const hb::GradientPlan gradients = hb::plan_gradients(graph, topology, rules);
    for (size_t v = 0; v < values_.size(); ++v)
        values_[v].needs_gradient = topology.has_gradient[v];
    for (size_t l = 0; l < layers_.size(); ++l) {
        LayerPlan& layer = layers_[l];
        layer.runs_backward = topology.runs_backward[l];
        layer.input_gradient.assign(layer.inputs.size(), false);
        layer.accumulate.assign(layer.inputs.size(), false);
        for (const hb::Contribution& c : gradients.contributions[l]) {
            layer.input_gradient[size_t(c.slot)] = true;
            layer.accumulate[size_t(c.slot)] = hb::adds_to_buffer(c.delivery);
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
        if (values_[layer.writes].needs_gradient) gradient_last[layer.writes] = layer.backward_time;
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
    // Last, so that every other request is the one a plan without it makes. It lives to the
    // step's end: it is read after the step, so nothing the step writes later may share it.
    ValuePlan& input = values_[size_t(input_)];
    if (input.needs_gradient)
        input.gradient_buffer =
            add_request(input.shape.elements() * element, gradient_first[size_t(input_)],
                        step_length() - 1, "d(" + input.name + ")");
}

}  // namespace hb_cudnn
