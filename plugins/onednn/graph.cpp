#include "graph.hpp"

#include "hb/plugin.hpp"

namespace onednn_backend {
namespace {

Dims dims_of(const int64_t* shape) {
    return {shape[0], shape[1], shape[2], shape[3]};
}

std::string to_string(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

class Importer {
public:
    explicit Importer(const hb_graph& source) : source_(source) {}

    Graph run() {
        if (source_.num_values <= 0 || !source_.values) throw hb::Error("graph: it has no values");
        if (source_.input < 0 || source_.input >= source_.num_values)
            throw hb::Error("graph: input value index " + std::to_string(source_.input) +
                            " is out of range");
        if (source_.num_layers < 0 || (source_.num_layers > 0 && !source_.layers) ||
            source_.num_tensors < 0 || (source_.num_tensors > 0 && !source_.tensors))
            throw hb::Error("graph: layer or tensor list is missing");
        graph_.input = source_.input;
        graph_.target = dims_of(source_.target_shape);
        for (int32_t v = 0; v < source_.num_values; ++v) {
            const hb_value& value = source_.values[v];
            const std::string name = value.name ? value.name : "value" + std::to_string(v);
            const Dims d = dims_of(value.shape);
            if (d.n <= 0 || d.c <= 0 || d.h <= 0 || d.w <= 0)
                throw hb::Error("graph: value '" + name + "' has shape " + to_string(d));
            graph_.value_names.push_back(name);
            graph_.values.push_back(d);
        }
        for (int32_t i = 0; i < source_.num_tensors; ++i) {
            const hb_tensor& t = source_.tensors[i];
            const std::string name = t.name ? t.name : "tensor" + std::to_string(i);
            if (t.rank < 1 || t.rank > 4 || hb::elements(t) <= 0)
                throw hb::Error("graph: tensor '" + name + "' has an invalid shape");
            TensorSpec spec;
            spec.name = name;
            spec.layer = t.layer;
            spec.role = t.role;
            spec.shape.assign(t.shape, t.shape + t.rank);
            spec.trainable = t.trainable != 0;
            spec.elements = hb::elements(t);
            graph_.tensors.push_back(std::move(spec));
        }
        defined_.assign(graph_.values.size(), false);
        is_loss_.assign(graph_.values.size(), false);
        tensor_user_.assign(graph_.tensors.size(), -1);
        defined_[graph_.input] = true;
        for (int32_t i = 0; i < source_.num_layers; ++i) import_layer(i);
        return std::move(graph_);
    }

private:
    void import_layer(int index) {
        const hb_layer& s = source_.layers[index];
        Layer layer;
        layer.name = s.name ? s.name : "layer" + std::to_string(index);
        layer.kind = s.kind;
        auto error = [&](const std::string& what) {
            return hb::Error("layer '" + layer.name + "' (" + hb::layer_kind_name(layer.kind) +
                             "): " + what);
        };
        if (s.num_inputs < 1 || !s.inputs) throw error("it has no inputs");
        for (int32_t k = 0; k < s.num_inputs; ++k) {
            const int v = s.inputs[k];
            if (v < 0 || v >= graph_.num_values())
                throw error("input value index " + std::to_string(v) + " is out of range");
            if (!defined_[v])
                throw error("input '" + graph_.value_names[v] +
                            "' is not computed before this layer");
            if (is_loss_[v])
                throw error("its input '" + graph_.value_names[v] +
                            "' is a loss; only the training loss may use it");
            layer.inputs.push_back(v);
        }
        if (s.output < 0 || s.output >= graph_.num_values())
            throw error("output value index " + std::to_string(s.output) + " is out of range");
        if (defined_[s.output])
            throw error("output '" + graph_.value_names[s.output] +
                        "' is already computed by an earlier layer (values must be distinct)");
        layer.output = s.output;
        if (layer.kind != HB_LAYER_ADD && s.num_inputs != 1)
            throw error("expected 1 input, got " + std::to_string(s.num_inputs));

        const Dims x = graph_.values[layer.inputs[0]];
        const Dims y = graph_.values[layer.output];
        auto expect_output = [&](const Dims& expected) {
            if (y != expected)
                throw error("output shape " + to_string(y) + ", expected " + to_string(expected));
        };
        auto expect_tensor = [&](int t, const char* role, const std::vector<int64_t>& shape) {
            if (t < 0) return -1;
            if (t >= static_cast<int>(graph_.tensors.size()))
                throw error(std::string(role) + " tensor index " + std::to_string(t) +
                            " is out of range");
            const TensorSpec& spec = graph_.tensors[t];
            if (spec.shape != shape)
                throw error(std::string(role) + " '" + spec.name + "' has shape " +
                            to_string(spec.shape) + ", expected " + to_string(shape));
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
                const int64_t oh = (x.h + 2 * layer.padding - layer.kernel) / layer.stride + 1;
                const int64_t ow = (x.w + 2 * layer.padding - layer.kernel) / layer.stride + 1;
                if (x.h + 2 * layer.padding < layer.kernel ||
                    x.w + 2 * layer.padding < layer.kernel)
                    throw error("the kernel is larger than the input");
                expect_output({x.n, s.out_channels, oh, ow});
                if (s.weight < 0) throw error("it has no weight tensor");
                layer.weight = expect_tensor(s.weight, "weight",
                                             {s.out_channels, s.in_channels, s.kernel, s.kernel});
                layer.bias = expect_tensor(s.bias, "bias", {s.out_channels});
                break;
            }
            case HB_LAYER_BATCHNORM:
                expect_output(x);
                if (x.n * x.h * x.w < 2)
                    throw error("training-mode batch norm needs more than one value per channel");
                if (!(s.eps > 0) || !(s.momentum >= 0 && s.momentum <= 1))
                    throw error("eps must be positive and momentum in [0, 1]");
                layer.weight = expect_tensor(s.weight, "gamma", {x.c});
                layer.bias = expect_tensor(s.bias, "beta", {x.c});
                layer.running_mean = expect_tensor(s.running_mean, "running mean", {x.c});
                layer.running_var = expect_tensor(s.running_var, "running variance", {x.c});
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
                    if (graph_.values[v] != x)
                        throw error("inputs have different shapes " + to_string(x) + " and " +
                                    to_string(graph_.values[v]));
                expect_output(x);
                break;
            case HB_LAYER_MSE_LOSS:
                if (x != graph_.target)
                    throw error("input shape " + to_string(x) + " differs from the target shape " +
                                to_string(graph_.target));
                expect_output({1, 1, 1, 1});
                layer.loss_weight = s.loss_weight;
                break;
            default:
                throw hb::Error("layer '" + layer.name + "': kind " +
                                    std::to_string(static_cast<int>(layer.kind)) +
                                    " is not supported by the oneDNN backend",
                                HB_UNSUPPORTED);
        }
        // Gradients of a tensor are written by its layer's backward pass, not accumulated.
        for (int t : {layer.weight, layer.bias, layer.running_mean, layer.running_var}) {
            if (t < 0) continue;
            if (tensor_user_[t] >= 0)
                throw hb::Error("layer '" + layer.name + "': tensor '" + graph_.tensors[t].name +
                                    "' is already used by layer '" +
                                    graph_.layers[tensor_user_[t]].name +
                                    "'; shared tensors are not supported by the oneDNN backend",
                                HB_UNSUPPORTED);
            tensor_user_[t] = index;
        }
        defined_[layer.output] = true;
        is_loss_[layer.output] = layer.kind == HB_LAYER_MSE_LOSS;
        graph_.layers.push_back(std::move(layer));
    }

    const hb_graph& source_;
    Graph graph_;
    std::vector<bool> defined_, is_loss_;
    std::vector<int> tensor_user_;
};

}  // namespace

std::string to_string(const Dims& d) {
    return "[" + std::to_string(d.n) + ", " + std::to_string(d.c) + ", " + std::to_string(d.h) +
           ", " + std::to_string(d.w) + "]";
}

Graph import_graph(const hb_graph& graph) {
    return Importer(graph).run();
}

}  // namespace onednn_backend
