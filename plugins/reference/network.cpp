#include "network.hpp"

#include "hb/plugin.hpp"

#include <algorithm>

namespace reference {
namespace {

Dims dims_of(const int64_t* shape) {
    return {shape[0], shape[1], shape[2], shape[3]};
}

bool operator==(const Dims& a, const Dims& b) {
    return a.n == b.n && a.c == b.c && a.h == b.h && a.w == b.w;
}
bool operator!=(const Dims& a, const Dims& b) {
    return !(a == b);
}

std::string to_string(const Dims& d) {
    return "[" + std::to_string(d.n) + ", " + std::to_string(d.c) + ", " + std::to_string(d.h) +
           ", " + std::to_string(d.w) + "]";
}

std::string name_of(const char* name) {
    return name ? name : "(unnamed)";
}

std::string to_string(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

}  // namespace

template <class T>
Network<T>::Network(const hb_graph& graph, ThreadPool& pool, TileKernel kernel)
    : pool_(pool), gemm_(pool, kernel) {
    if (graph.num_values <= 0 || !graph.values || graph.num_layers < 0 ||
        (graph.num_layers > 0 && !graph.layers) || graph.num_tensors < 0 ||
        (graph.num_tensors > 0 && !graph.tensors))
        throw hb::Error("graph: its value, layer or tensor list is missing");
    if (graph.input < 0 || graph.input >= graph.num_values)
        throw hb::Error("graph: input value index " + std::to_string(graph.input) +
                        " is out of range");
    input_ = graph.input;
    target_dims_ = dims_of(graph.target_shape);
    read_values(graph);
    read_tensors(graph);
    read_layers(graph);

    values_.resize(value_dims_.size());
    value_gradients_.resize(value_dims_.size());
    int64_t workspace = 0;
    for (const Layer& layer : layers_) {
        values_[layer.output].assign(static_cast<size_t>(value_dims_[layer.output].elements()),
                                     T(0));
        if (layer.kind == HB_LAYER_CONV2D)
            workspace = std::max(workspace, layer.conv.workspace_elements());
    }
    workspace_.resize(static_cast<size_t>(workspace));
}

template <class T>
void Network<T>::read_values(const hb_graph& graph) {
    for (int32_t v = 0; v < graph.num_values; ++v) {
        const Dims d = dims_of(graph.values[v].shape);
        if (d.n <= 0 || d.c <= 0 || d.h <= 0 || d.w <= 0)
            throw hb::Error("graph: value '" + name_of(graph.values[v].name) + "' has shape " +
                            to_string(d));
        value_dims_.push_back(d);
    }
}

template <class T>
void Network<T>::read_tensors(const hb_graph& graph) {
    for (int32_t i = 0; i < graph.num_tensors; ++i) {
        const hb_tensor& t = graph.tensors[i];
        if (t.rank < 1 || t.rank > 4 || hb::elements(t) <= 0)
            throw hb::Error("graph: tensor '" + name_of(t.name) + "' has an invalid shape");
        const auto elements = static_cast<size_t>(hb::elements(t));
        tensor_info_.push_back({name_of(t.name), t.trainable != 0, hb::elements(t)});
        tensors_.emplace_back(elements, T(0));
        gradients_.emplace_back(t.trainable ? elements : 0, T(0));
    }
}

template <class T>
void Network<T>::read_layers(const hb_graph& graph) {
    std::vector<bool> defined(static_cast<size_t>(graph.num_values), false);
    std::vector<bool> is_loss(static_cast<size_t>(graph.num_values), false);
    defined[input_] = true;
    for (int32_t i = 0; i < graph.num_layers; ++i) {
        const hb_layer& source = graph.layers[i];
        Layer layer;
        layer.name = source.name ? source.name : "layer " + std::to_string(i);
        layer.kind = source.kind;
        if (!hb::known_layer_kind(layer.kind))
            throw hb::Error("layer '" + layer.name + "': kind " +
                                std::to_string(static_cast<int>(layer.kind)) +
                                " is not supported by the reference backend",
                            HB_UNSUPPORTED);
        check_layer(graph, source, layer, defined);
        for (int v : layer.inputs)
            if (is_loss[v])
                throw hb::Error("layer '" + layer.name + "': its input '" +
                                name_of(graph.values[v].name) +
                                "' is a loss; only the training loss may use it");
        defined[layer.output] = true;
        is_loss[layer.output] = layer.kind == HB_LAYER_MSE_LOSS;
        layers_.push_back(std::move(layer));
    }
}

template <class T>
void Network<T>::check_layer(const hb_graph& graph, const hb_layer& source, Layer& layer,
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
            throw error("input '" + name_of(graph.values[v].name) +
                        "' is not computed before this layer");
        layer.inputs.push_back(v);
    }
    const int out = source.output;
    if (out < 0 || out >= graph.num_values)
        throw error("output value index " + std::to_string(out) + " is out of range");
    if (defined[out])
        throw error("output '" + name_of(graph.values[out].name) +
                    "' is already computed by an earlier layer (values must be distinct)");
    layer.output = out;

    const bool unary = layer.kind != HB_LAYER_ADD;
    if (unary && source.num_inputs != 1)
        throw error("expected 1 input, got " + std::to_string(source.num_inputs));
    const Dims x = value_dims_[layer.inputs[0]];
    const Dims y = value_dims_[out];
    auto expect_output = [&](const Dims& expected) {
        if (y != expected)
            throw error("output shape " + to_string(y) + ", expected " + to_string(expected));
    };
    auto expect_tensor = [&](int index, const char* role, const std::vector<int64_t>& shape) {
        if (index < 0) return -1;
        if (index >= graph.num_tensors)
            throw error(std::string(role) + " tensor index " + std::to_string(index) +
                        " is out of range");
        const hb_tensor& t = graph.tensors[index];
        const std::vector<int64_t> actual(t.shape, t.shape + t.rank);
        if (actual != shape)
            throw error(std::string(role) + " '" + name_of(t.name) + "' has shape " +
                        to_string(actual) + ", expected " + to_string(shape));
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
            const int64_t out_h = conv_output_size(x.h, k, source.stride, source.padding);
            const int64_t out_w = conv_output_size(x.w, k, source.stride, source.padding);
            if (out_h < 1 || out_w < 1) throw error("the kernel is larger than the input");
            expect_output({x.n, source.out_channels, out_h, out_w});
            if (source.weight < 0) throw error("it has no weight tensor");
            layer.weight = expect_tensor(source.weight, "weight",
                                         {source.out_channels, source.in_channels, k, k});
            layer.bias = expect_tensor(source.bias, "bias", {source.out_channels});
            layer.conv = ConvShape{x, y, k, source.stride, source.padding};
            break;
        }
        case HB_LAYER_BATCHNORM:
            expect_output(x);
            if (x.n * x.plane() < 2)
                throw error("training-mode batch norm needs more than one value per channel");
            if (!(source.eps > 0) || !(source.momentum >= 0 && source.momentum <= 1))
                throw error("eps must be positive and momentum in [0, 1]");
            layer.weight = expect_tensor(source.weight, "gamma", {x.c});
            layer.bias = expect_tensor(source.bias, "beta", {x.c});
            layer.running_mean = expect_tensor(source.running_mean, "running mean", {x.c});
            layer.running_var = expect_tensor(source.running_var, "running variance", {x.c});
            layer.batchnorm = BatchNormParams{source.momentum, source.eps};
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
                if (value_dims_[v] != x)
                    throw error("inputs have different shapes " + to_string(x) + " and " +
                                to_string(value_dims_[v]));
            expect_output(x);
            break;
        case HB_LAYER_MSE_LOSS:
            if (x != target_dims_)
                throw error("input shape " + to_string(x) + " differs from the target shape " +
                            to_string(target_dims_));
            expect_output({1, 1, 1, 1});
            layer.loss_weight = source.loss_weight;
            break;
    }
}

template <class T>
int64_t Network<T>::input_elements() const {
    return value_dims_[input_].elements();
}

template <class T>
int64_t Network<T>::target_elements() const {
    return target_dims_.elements();
}

template <class T>
const T* Network<T>::value(int v) const {
    return v == input_ ? input_data_ : values_[v].data();
}

template <class T>
double Network<T>::forward(const T* input, const T* target, int first_layer) {
    if (first_layer < 0 || first_layer > static_cast<int>(layers_.size()) ||
        (first_layer > 0 && !forward_done_))
        throw hb::Error("forward: cannot start at layer " + std::to_string(first_layer));
    input_data_ = input;
    target_data_ = target;
    for (size_t i = static_cast<size_t>(first_layer); i < layers_.size(); ++i)
        forward_layer(layers_[i]);
    forward_done_ = true;
    double loss = 0;
    for (const Layer& layer : layers_)
        if (layer.kind == HB_LAYER_MSE_LOSS) loss += layer.loss;
    return loss;
}

template <class T>
void Network<T>::forward_layer(Layer& layer) {
    const T* x = value(layer.inputs[0]);
    const Dims d = value_dims_[layer.inputs[0]];
    T* y = values_[layer.output].data();
    switch (layer.kind) {
        case HB_LAYER_CONV2D:
            conv2d_forward(gemm_, layer.conv, x, tensor_data(layer.weight), tensor_data(layer.bias),
                           y, workspace_.data());
            break;
        case HB_LAYER_BATCHNORM:
            batchnorm_forward(pool_, d, layer.batchnorm, x, tensor_data(layer.weight),
                              tensor_data(layer.bias), y, tensor_data(layer.running_mean),
                              tensor_data(layer.running_var), layer.statistics);
            break;
        case HB_LAYER_RELU:
            relu_forward(pool_, d.elements(), x, y);
            break;
        case HB_LAYER_MAXPOOL2D:
            maxpool2d_forward(pool_, d, x, y);
            break;
        case HB_LAYER_UPSAMPLE:
            upsample_forward(pool_, d, x, y);
            break;
        case HB_LAYER_ADD: {
            std::vector<const T*> inputs;
            for (int v : layer.inputs) inputs.push_back(value(v));
            add_forward(pool_, d.elements(), inputs, y);
            break;
        }
        case HB_LAYER_MSE_LOSS:
            layer.loss = mse_loss_forward(d.elements(), x, target_data_, layer.loss_weight);
            y[0] = static_cast<T>(layer.loss);
            break;
    }
}

template <class T>
void Network<T>::backward() {
    if (!forward_done_) throw hb::Error("backward: no forward pass to differentiate");
    for (auto& g : gradients_) std::fill(g.begin(), g.end(), T(0));
    for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) {
        Layer& layer = *it;
        const bool reaches_loss =
            layer.kind == HB_LAYER_MSE_LOSS || !value_gradients_[layer.output].empty();
        if (reaches_loss) backward_layer(layer);
        gradient_pool_.release(std::move(value_gradients_[layer.output]));
    }
    for (auto& g : value_gradients_) gradient_pool_.release(std::move(g));
}

template <class T>
T* Network<T>::value_gradient(int v) {
    if (v == input_) return nullptr;
    std::vector<T>& g = value_gradients_[v];
    if (g.empty()) {
        g = gradient_pool_.acquire(static_cast<size_t>(value_dims_[v].elements()));
        T* data = g.data();
        parallel_for(pool_, static_cast<int64_t>(g.size()), 1 << 16,
                     [&](int64_t i0, int64_t i1) { std::fill(data + i0, data + i1, T(0)); });
    }
    return g.data();
}

template <class T>
void Network<T>::backward_layer(Layer& layer) {
    const int in = layer.inputs[0];
    const T* x = value(in);
    const Dims d = value_dims_[in];
    const T* dy = value_gradients_[layer.output].data();
    switch (layer.kind) {
        case HB_LAYER_CONV2D:
            conv2d_backward(gemm_, layer.conv, x, tensor_data(layer.weight), dy, value_gradient(in),
                            gradient_data(layer.weight), gradient_data(layer.bias),
                            workspace_.data());
            break;
        case HB_LAYER_BATCHNORM:
            batchnorm_backward(pool_, d, x, tensor_data(layer.weight), layer.statistics, dy,
                               value_gradient(in), gradient_data(layer.weight),
                               gradient_data(layer.bias));
            break;
        case HB_LAYER_RELU:
            if (T* dx = value_gradient(in)) relu_backward(pool_, d.elements(), x, dy, dx);
            break;
        case HB_LAYER_MAXPOOL2D:
            if (T* dx = value_gradient(in)) maxpool2d_backward(pool_, d, x, dy, dx);
            break;
        case HB_LAYER_UPSAMPLE:
            if (T* dx = value_gradient(in)) upsample_backward(pool_, d, dy, dx);
            break;
        case HB_LAYER_ADD: {
            std::vector<T*> dinputs;
            for (int v : layer.inputs) dinputs.push_back(value_gradient(v));
            add_backward(pool_, d.elements(), dy, dinputs);
            break;
        }
        case HB_LAYER_MSE_LOSS:
            if (T* dx = value_gradient(in))
                mse_loss_backward(pool_, d.elements(), x, target_data_, layer.loss_weight, dx);
            break;
    }
}

template <class T>
int Network<T>::pointwise_convolutions() const {
    return static_cast<int>(std::count_if(layers_.begin(), layers_.end(), [](const Layer& l) {
        return l.kind == HB_LAYER_CONV2D && l.conv.pointwise();
    }));
}

template <class T>
int Network<T>::im2col_convolutions() const {
    return static_cast<int>(std::count_if(layers_.begin(), layers_.end(), [](const Layer& l) {
        return l.kind == HB_LAYER_CONV2D && !l.conv.pointwise();
    }));
}

template <class T>
uint64_t Network<T>::allocated_bytes() const {
    uint64_t elements = workspace_.size();
    for (const auto& v : values_) elements += v.size();
    for (const auto& t : tensors_) elements += t.size();
    for (const auto& g : gradients_) elements += g.size();
    uint64_t bytes =
        elements * sizeof(T) + gradient_pool_.allocated_bytes() + gemm_.scratch_bytes();
    for (const Layer& layer : layers_)
        bytes += (layer.statistics.mean.size() + layer.statistics.inv_std.size()) * sizeof(double);
    return bytes;
}

template class Network<float>;
template class Network<double>;

}  // namespace reference
