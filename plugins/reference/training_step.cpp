#include "training_step.hpp"

#include "hb/graph.hpp"

#include <algorithm>
#include <cmath>

namespace hb_reference {

template <class T>
TrainingStep<T>::TrainingStep(const hb::Graph& graph, hb::HostState<T>& state, ThreadPool& pool,
                              TileKernel kernel)
    : state_(state), pool_(pool), gemm_(pool, kernel) {
    auto dims = [](const hb::Dims& d) { return Dims{d.n, d.c, d.h, d.w}; };
    input_ = graph.input;
    target_dims_ = dims(graph.target);
    for (const hb::Dims& d : graph.values) value_dims_.push_back(dims(d));
    for (const hb::Tensor& t : graph.tensors)
        tensor_info_.push_back({t.name, t.trainable, t.elements, t.layer});
    for (const hb::Layer& l : graph.layers) {
        Layer layer(l);
        if (l.kind == HB_LAYER_CONV2D)
            layer.conv = ConvShape{value_dims_[l.inputs[0]], value_dims_[l.output], l.kernel,
                                   l.stride, l.padding};
        layer.batchnorm = BatchNormParams{l.momentum, l.eps};
        layers_.push_back(std::move(layer));
    }
    const int num_layers = static_cast<int>(layers_.size());
    std::vector<int> first_user(tensor_info_.size(), num_layers);
    for (int l = num_layers - 1; l >= 0; --l) {
        const Layer& layer = layers_[static_cast<size_t>(l)];
        for (int t : {layer.weight, layer.bias, layer.running_mean, layer.running_var})
            if (t >= 0) first_user[static_cast<size_t>(t)] = l;
    }
    for (int t = 0; t < num_tensors(); ++t)
        if (tensor_info_[static_cast<size_t>(t)].trainable) gradient_order_.push_back(t);
    std::stable_sort(gradient_order_.begin(), gradient_order_.end(), [&](int a, int b) {
        return first_user[static_cast<size_t>(a)] > first_user[static_cast<size_t>(b)];
    });
    for (int t : gradient_order_) completed_by_.push_back(first_user[static_cast<size_t>(t)]);

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
int64_t TrainingStep<T>::input_elements() const {
    return value_dims_[input_].elements();
}

template <class T>
int64_t TrainingStep<T>::target_elements() const {
    return target_dims_.elements();
}

template <class T>
const T* TrainingStep<T>::value(int v) const {
    return v == input_ ? input_data_ : values_[v].data();
}

template <class T>
double TrainingStep<T>::forward(const T* input, const T* target, int first_layer) {
    if (first_layer < 0 || first_layer > static_cast<int>(layers_.size()) ||
        (first_layer > 0 && !forward_done_))
        throw hb::Error("forward: cannot start at layer " + std::to_string(first_layer));
    input_data_ = input;
    target_data_ = target;
    ++passes_;
    for (int i = first_layer; i < static_cast<int>(layers_.size()); ++i) {
        forward_layer(i);
        const Layer& layer = layers_[static_cast<size_t>(i)];
        if (layer.kind != HB_LAYER_MSE_LOSS)
            round_randomly_at(site(i, 0, 0), values_[layer.output], forward_sums(layer));
    }
    forward_done_ = true;
    const hb::EventLog::Scope event(events_, "loss sum", -1, HB_PHASE_LOSS);
    double loss = 0;
    for (const Layer& layer : layers_)
        if (layer.kind == HB_LAYER_MSE_LOSS) loss += layer.loss;
    return loss;
}

template <class T>
void TrainingStep<T>::forward_layer(int index) {
    Layer& layer = layers_[static_cast<size_t>(index)];
    const hb::EventLog::Scope event(events_, hb::layer_event_name(layer.kind, true), index,
                                    HB_PHASE_FORWARD);
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
                              tensor_data(layer.running_var), layer.statistics, rounding_,
                              site(index, 3, 0));
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
void TrainingStep<T>::backward(const std::function<void(int)>& final) {
    if (!forward_done_) throw hb::Error("backward: no forward pass to differentiate");
    {
        const hb::EventLog::Scope event(events_, "gradient zeroing", -1, HB_PHASE_OTHER);
        for (int t = 0; t < num_tensors(); ++t)
            std::fill(gradient(t).begin(), gradient(t).end(), T(0));
    }
    size_t next = 0;
    const auto complete_from = [&](int layer) {
        for (; next < completed_by_.size() && completed_by_[next] >= layer; ++next) {
            const int tensor = gradient_order_[next], user = completed_by_[next];
            round_randomly_at(site(user, 2, tensor), gradient(tensor), 1);
            if (final) final(static_cast<int>(next));
        }
    };
    complete_from(static_cast<int>(layers_.size()));
    for (int i = static_cast<int>(layers_.size()) - 1; i >= 0; --i) {
        const Layer& layer = layers_[static_cast<size_t>(i)];
        const bool reaches_loss =
            layer.kind == HB_LAYER_MSE_LOSS || !value_gradients_[layer.output].empty();
        if (reaches_loss) {
            backward_layer(i);
            for (int v : layer.inputs)
                round_randomly_at(site(i, 1, v), value_gradients_[v], input_gradient_sums(layer));
        }
        gradient_pool_.release(std::move(value_gradients_[layer.output]));
        complete_from(i);
    }
    if (input_gradient_wanted_) {
        gradient_pool_.release(std::move(input_gradient_));
        input_gradient_ = std::move(value_gradients_[input_]);
        if (input_gradient_.empty())  // no layer sends the input a gradient
            input_gradient_.assign(static_cast<size_t>(value_dims_[input_].elements()), T(0));
    }
    for (auto& g : value_gradients_) gradient_pool_.release(std::move(g));
}

template <class T>
uint64_t TrainingStep<T>::site(int layer, int what, int index) const {
    return (passes_ << 40) ^ (static_cast<uint64_t>(layer) << 22) ^
           (static_cast<uint64_t>(what) << 20) ^ static_cast<uint64_t>(index);
}

template <class T>
void TrainingStep<T>::round_randomly_at(uint64_t at, std::vector<T>& data, double sums) {
    round_randomly(pool_, rounding_, at, data.data(), static_cast<int64_t>(data.size()), sums);
}

template <class T>
double TrainingStep<T>::forward_sums(const Layer& layer) const {
    if (layer.kind == HB_LAYER_CONV2D)
        return std::sqrt(static_cast<double>(layer.conv.patch_size()));
    return layer.kind == HB_LAYER_BATCHNORM || layer.kind == HB_LAYER_ADD ? 1 : 0;
}

template <class T>
double TrainingStep<T>::input_gradient_sums(const Layer& layer) const {
    const ConvShape& c = layer.conv;
    if (layer.kind == HB_LAYER_CONV2D)
        return std::sqrt(static_cast<double>(c.output.c * c.kernel * c.kernel));
    return layer.kind == HB_LAYER_BATCHNORM || layer.kind == HB_LAYER_UPSAMPLE ? 1 : 0;
}

template <class T>
T* TrainingStep<T>::value_gradient(int v) {
    if (v == input_ && !input_gradient_wanted_) return nullptr;
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
void TrainingStep<T>::backward_layer(int index) {
    using Scope = hb::EventLog::Scope;
    Layer& layer = layers_[static_cast<size_t>(index)];
    const int in = layer.inputs[0];
    const T* x = value(in);
    const Dims d = value_dims_[in];
    const T* dy = value_gradients_[layer.output].data();
    // A layer sends the graph's input a gradient only when it is wanted. The gradient buffer of
    // an input is zeroed when first used: part of the backward pass that writes it.
    const bool needs_dx = in != input_ || input_gradient_wanted_;
    switch (layer.kind) {
        case HB_LAYER_CONV2D: {
            // The weight and bias gradients first, then the input's: the order of one
            // conv2d_backward call, so the results are the same bits.
            {
                const Scope event(events_, "conv2d_backward_weights", index,
                                  HB_PHASE_BACKWARD_WEIGHTS);
                conv2d_backward(gemm_, layer.conv, x, tensor_data(layer.weight), dy,
                                static_cast<T*>(nullptr), gradient_data(layer.weight),
                                gradient_data(layer.bias), workspace_.data());
            }
            if (!needs_dx) break;
            const Scope event(events_, "conv2d_backward_data", index, HB_PHASE_BACKWARD_DATA);
            conv2d_backward(gemm_, layer.conv, x, tensor_data(layer.weight), dy, value_gradient(in),
                            static_cast<T*>(nullptr), static_cast<T*>(nullptr), workspace_.data());
            break;
        }
        case HB_LAYER_BATCHNORM: {
            const bool affine = layer.weight >= 0 || layer.bias >= 0;
            const Scope event(events_, "batchnorm_backward", index,
                              affine ? HB_PHASE_BACKWARD : HB_PHASE_BACKWARD_DATA);
            batchnorm_backward(pool_, d, x, tensor_data(layer.weight), layer.statistics, dy,
                               value_gradient(in), gradient_data(layer.weight),
                               gradient_data(layer.bias));
            break;
        }
        case HB_LAYER_RELU: {
            if (!needs_dx) break;
            const Scope event(events_, "relu_backward", index, HB_PHASE_BACKWARD_DATA);
            relu_backward(pool_, d.elements(), x, dy, value_gradient(in));
            break;
        }
        case HB_LAYER_MAXPOOL2D: {
            if (!needs_dx) break;
            const Scope event(events_, "maxpool2d_backward", index, HB_PHASE_BACKWARD_DATA);
            maxpool2d_backward(pool_, d, x, dy, value_gradient(in));
            break;
        }
        case HB_LAYER_UPSAMPLE: {
            if (!needs_dx) break;
            const Scope event(events_, "upsample_backward", index, HB_PHASE_BACKWARD_DATA);
            upsample_backward(pool_, d, dy, value_gradient(in));
            break;
        }
        case HB_LAYER_ADD: {
            const Scope event(events_, "add_backward", index, HB_PHASE_BACKWARD_DATA);
            std::vector<T*> dinputs;
            for (int v : layer.inputs) dinputs.push_back(value_gradient(v));
            add_backward(pool_, d.elements(), dy, dinputs);
            break;
        }
        case HB_LAYER_MSE_LOSS: {
            if (!needs_dx) break;
            const Scope event(events_, "mse_loss_backward", index, HB_PHASE_BACKWARD_DATA);
            mse_loss_backward(pool_, d.elements(), x, target_data_, layer.loss_weight,
                              value_gradient(in));
            break;
        }
    }
}

template <class T>
int TrainingStep<T>::pointwise_convolutions() const {
    return static_cast<int>(std::count_if(layers_.begin(), layers_.end(), [](const Layer& l) {
        return l.kind == HB_LAYER_CONV2D && l.conv.pointwise();
    }));
}

template <class T>
int TrainingStep<T>::im2col_convolutions() const {
    return static_cast<int>(std::count_if(layers_.begin(), layers_.end(), [](const Layer& l) {
        return l.kind == HB_LAYER_CONV2D && !l.conv.pointwise();
    }));
}

template <class T>
uint64_t TrainingStep<T>::allocated_bytes() const {
    uint64_t elements = workspace_.size();
    for (const auto& v : values_) elements += v.size();
    elements += input_gradient_.size();
    uint64_t bytes =
        elements * sizeof(T) + gradient_pool_.allocated_bytes() + gemm_.scratch_bytes();
    for (const Layer& layer : layers_)
        bytes += (layer.statistics.mean.size() + layer.statistics.inv_std.size()) * sizeof(double);
    return bytes;
}

template class TrainingStep<float>;
template class TrainingStep<double>;

}  // namespace hb_reference
