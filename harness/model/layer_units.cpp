#include "model/layer_units.hpp"

#include "hb/graph.hpp"

#include <fmt/format.h>

#include <map>
#include <utility>

namespace harness::model {

namespace {

const Shape& shape_of(const Graph& g, int value) {
    return g.values.at(static_cast<size_t>(value)).shape;
}

// The batch norms whose ReLU a backend may fuse (hb::batchnorm_relu_pairs): ReLU by batch norm.
std::map<int, int> fusable_relus(const Graph& model) {
    const AbiGraph abi(model);
    const hb::Graph graph = hb::import_graph(*abi.get(), {"harness", false});
    std::map<int, int> relu_of;
    for (const auto& [batchnorm, relu] : hb::batchnorm_relu_pairs(graph, hb::uses_of(graph)))
        relu_of[batchnorm] = relu;
    return relu_of;
}

// What a unit is called, and what else tells two units apart that its name leaves out.
std::pair<std::string, std::string> describe(const Graph& model, const std::vector<int>& layers) {
    const Layer& l = model.layers.at(static_cast<size_t>(layers.front()));
    const Shape& in = shape_of(model, l.inputs.at(0));
    const std::string where = fmt::format("c{}/{}x{}", in[1], in[2], in[3]);
    std::string name;
    switch (l.kind) {
        case LayerKind::conv2d:
            name = fmt::format("conv{}x{}/s{}/c{}-{}/{}x{}{}", l.kernel, l.kernel, l.stride,
                               l.in_channels, l.out_channels, in[2], in[3],
                               l.bias >= 0 ? "" : "/nobias");
            break;
        case LayerKind::add:
            name = fmt::format("add{}/{}", l.inputs.size(), where);
            break;
        default:
            name =
                std::string(to_string(l.kind)) + (layers.size() > 1 ? "+relu" : "") + "/" + where;
    }
    const std::string hidden = fmt::format("n{} p{} m{} e{} w{} in{}", in[0], l.padding, l.momentum,
                                           l.eps, l.loss_weight, l.inputs.at(0) == model.input);
    return {name, hidden};
}

}  // namespace

std::vector<LayerUnit> layer_units(const Graph& model) {
    const std::map<int, int> relu_of = fusable_relus(model);
    std::vector<bool> fused(model.layers.size(), false);
    for (const auto& pair : relu_of) fused[static_cast<size_t>(pair.second)] = true;

    std::vector<LayerUnit> units;
    std::map<std::string, size_t> index_of;  // name + hidden -> unit
    for (int l = 0; l < static_cast<int>(model.layers.size()); ++l) {
        if (fused[static_cast<size_t>(l)]) continue;
        std::vector<int> layers{l};
        if (const auto relu = relu_of.find(l); relu != relu_of.end())
            layers.push_back(relu->second);
        const auto [name, hidden] = describe(model, layers);
        const Layer& first = model.layers[static_cast<size_t>(l)];
        auto [it, is_new] = index_of.emplace(name + " " + hidden, units.size());
        if (is_new) {
            LayerUnit& u = units.emplace_back();
            u.name = name;
            u.kind = name.substr(0, name.find('/'));
            if (first.kind == LayerKind::conv2d) u.kind = "conv2d";
            if (first.kind == LayerKind::add) u.kind = "add";
            u.layers = layers;
            for (int input : first.inputs) u.reads_model_input |= input == model.input;
            int64_t flops = 0;
            for (int k : layers)
                flops += forward_flops_per_image(model, model.layers[static_cast<size_t>(k)]);
            u.training_flops = 3 * flops * model.batch();
        }
        units[it->second].occurrences.push_back(first.name);
    }
    // Two configurations that only the hidden fields tell apart keep apart names.
    std::map<std::string, int> seen;
    for (LayerUnit& u : units)
        if (const int n = seen[u.name]++; n > 0) u.name += "#" + std::to_string(n + 1);
    return units;
}

Graph unit_graph(const Graph& model, const LayerUnit& unit) {
    Graph g;
    auto new_value = [&g](std::string name, Shape shape) {
        g.values.push_back(Value{std::move(name), shape});
        return static_cast<int>(g.values.size()) - 1;
    };
    auto add_layer = [&g](Layer l) {
        g.layers.push_back(std::move(l));
        return static_cast<int>(g.layers.size()) - 1;
    };
    auto copy_tensor = [&](int tensor, int layer) {
        if (tensor < 0) return -1;
        Tensor t = model.tensors.at(static_cast<size_t>(tensor));
        t.layer = layer;
        g.tensors.push_back(std::move(t));
        return static_cast<int>(g.tensors.size()) - 1;
    };

    const Layer& first = model.layers.at(static_cast<size_t>(unit.layers.front()));
    const Shape input_shape = shape_of(model, first.inputs.at(0));
    g.input = new_value("input", input_shape);

    std::map<int, int> value_of;  // model value -> unit graph value
    for (size_t k = 0; k < first.inputs.size(); ++k) {
        if (unit.reads_model_input) {
            value_of[first.inputs[k]] = g.input;
            continue;
        }
        Layer probe;
        probe.name = "probe" + std::to_string(k);
        probe.kind = LayerKind::conv2d;
        probe.inputs = {g.input};
        probe.in_channels = probe.out_channels = static_cast<int>(input_shape[1]);
        probe.kernel = 1;
        g.tensors.push_back(Tensor{probe.name + ".weight",
                                   static_cast<int>(g.layers.size()),
                                   TensorRole::weight,
                                   {input_shape[1], input_shape[1], 1, 1}});
        probe.weight = static_cast<int>(g.tensors.size()) - 1;
        probe.output = new_value(probe.name, input_shape);
        value_of[first.inputs[k]] = probe.output;
        add_layer(std::move(probe));
    }

    int last = -1;
    for (int index : unit.layers) {
        Layer l = model.layers.at(static_cast<size_t>(index));
        for (int& v : l.inputs) v = value_of.at(v);
        const int position = static_cast<int>(g.layers.size());
        l.weight = copy_tensor(l.weight, position);
        l.bias = copy_tensor(l.bias, position);
        l.running_mean = copy_tensor(l.running_mean, position);
        l.running_var = copy_tensor(l.running_var, position);
        const int model_output = l.output;
        l.output = new_value(l.name, shape_of(model, model_output));
        value_of[model_output] = l.output;
        last = add_layer(std::move(l));
    }

    const Layer& tail = g.layers[static_cast<size_t>(last)];
    if (tail.kind == LayerKind::mse_loss) {
        g.target_shape = shape_of(g, tail.inputs.at(0));
    } else {
        Layer loss;
        loss.name = "loss";
        loss.kind = LayerKind::mse_loss;
        loss.inputs = {tail.output};
        g.target_shape = shape_of(g, tail.output);
        loss.output = new_value(loss.name, {1, 1, 1, 1});
        add_layer(std::move(loss));
    }
    return g;
}

}  // namespace harness::model
