// A small layer graph written layer by layer for tests (harness/model's IR): values get their
// shapes from the layers, tensors their roles and shapes.
#pragma once

#include "model/graph.hpp"

#include <string>
#include <utility>
#include <vector>

namespace harness::testing {

class GraphBuilder {
public:
    using Graph = model::Graph;
    using LayerKind = model::LayerKind;
    using Shape = model::Shape;
    using TensorRole = model::TensorRole;

    int input(Shape shape) {
        graph_.input = value("input", shape);
        return graph_.input;
    }
    int conv(const std::string& name, int x, int out, int kernel, int stride, int padding,
             bool bias = true) {
        const Shape in = shape(x);
        harness::model::Layer l = layer(name, LayerKind::conv2d, {x});
        l.in_channels = static_cast<int>(in[1]);
        l.out_channels = out;
        l.kernel = kernel;
        l.stride = stride;
        l.padding = padding;
        l.weight = tensor(name + ".weight", TensorRole::weight, {out, in[1], kernel, kernel});
        if (bias) l.bias = tensor(name + ".bias", TensorRole::bias, {out});
        const int64_t h = (in[2] + 2 * padding - kernel) / stride + 1;
        const int64_t w = (in[3] + 2 * padding - kernel) / stride + 1;
        return finish(l, {in[0], out, h, w});
    }
    int batchnorm(const std::string& name, int x) {
        const Shape in = shape(x);
        harness::model::Layer l = layer(name, LayerKind::batchnorm, {x});
        l.weight = tensor(name + ".weight", TensorRole::weight, {in[1]});
        l.bias = tensor(name + ".bias", TensorRole::bias, {in[1]});
        l.running_mean = tensor(name + ".running_mean", TensorRole::running_mean, {in[1]});
        l.running_var = tensor(name + ".running_var", TensorRole::running_var, {in[1]});
        return finish(l, in);
    }
    int relu(const std::string& name, int x) {
        return finish(layer(name, LayerKind::relu, {x}), shape(x));
    }
    int maxpool(const std::string& name, int x) {
        const Shape in = shape(x);
        return finish(layer(name, LayerKind::maxpool2d, {x}), {in[0], in[1], in[2] / 2, in[3] / 2});
    }
    int upsample(const std::string& name, int x) {
        const Shape in = shape(x);
        return finish(layer(name, LayerKind::upsample, {x}), {in[0], in[1], in[2] * 2, in[3] * 2});
    }
    int add(const std::string& name, std::vector<int> xs) {
        const Shape s = shape(xs[0]);
        return finish(layer(name, LayerKind::add, std::move(xs)), s);
    }
    int loss(const std::string& name, int x, float weight = 1.0f) {
        graph_.target_shape = shape(x);
        harness::model::Layer l = layer(name, LayerKind::mse_loss, {x});
        l.loss_weight = weight;
        return finish(l, {1, 1, 1, 1});
    }
    const Shape& shape(int v) const { return graph_.values[static_cast<size_t>(v)].shape; }
    Graph take() { return std::move(graph_); }

private:
    int value(const std::string& name, Shape shape) {
        graph_.values.push_back({name, shape});
        return static_cast<int>(graph_.values.size()) - 1;
    }
    static harness::model::Layer layer(const std::string& name, LayerKind kind,
                                       std::vector<int> inputs) {
        harness::model::Layer l;
        l.name = name;
        l.kind = kind;
        l.inputs = std::move(inputs);
        return l;
    }
    int tensor(const std::string& name, TensorRole role, std::vector<int64_t> shape) {
        harness::model::Tensor t;
        t.name = name;
        t.layer = static_cast<int>(graph_.layers.size());
        t.role = role;
        t.shape = std::move(shape);
        graph_.tensors.push_back(std::move(t));
        return static_cast<int>(graph_.tensors.size()) - 1;
    }
    int finish(harness::model::Layer l, Shape out) {
        l.output = value(l.name, out);
        graph_.layers.push_back(std::move(l));
        return graph_.layers.back().output;
    }
    Graph graph_;
};

}  // namespace harness::testing
