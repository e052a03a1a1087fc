// The step's execution: forward through the layers, backward through them in reverse, then the
// RMSProp update, each layer with the calls its setup chose (training_step_setup.cpp). Each
// operation is enqueued through times_.run with its layer, phase and name, as step_operations lists
// them (operations.cpp): between two events when the step is profiled, with one flag test
// otherwise.
#include "training_step.hpp"

#include "channel_kernels.hpp"
#include "check.hpp"
#include "kernels.hpp"

namespace hb_cudnn {
namespace {

const float one = 1.0f, zero = 0.0f;

const float* blend(bool accumulate) {
    return accumulate ? &one : &zero;
}

}  // namespace

void TrainingStep::forward(const void* input, const float* target) {
    input_ = input;
    target_ = target;
    for (size_t i = 0; i < layers_.size(); ++i) {
        const LayerPlan& layer = plan_->layers()[i];
        if (layer.absorbed) continue;
        ErrorContext context("layer '" + layer.name + "' (forward)");
        forward_layer(layer, layers_[i]);
    }
}

void TrainingStep::backward(const float* target, const std::function<void(int tensor)>& final) {
    target_ = target;
    for (size_t i = layers_.size(); i-- > 0;) {
        const LayerPlan& layer = plan_->layers()[i];
        if (!layer.runs_backward) continue;
        {
            ErrorContext context("layer '" + layer.name + "' (backward)");
            backward_layer(layer, layers_[i]);
        }
        if (final)
            for (int t : trainable_tensors(layer)) final(t);
    }
    if (!final) return;
    for (const LayerPlan& layer : plan_->layers())
        if (!layer.runs_backward)
            for (int t : trainable_tensors(layer)) final(t);
}

std::vector<int> TrainingStep::trainable_tensors(const LayerPlan& layer) const {
    std::vector<int> out;
    for (int t : {layer.weight, layer.bias})
        if (t >= 0 && tensor_plan(t).trainable) out.push_back(t);
    return out;
}

std::vector<int> TrainingStep::gradient_order() const {
    std::vector<int> order;
    for (size_t i = layers_.size(); i-- > 0;) {
        const LayerPlan& layer = plan_->layers()[i];
        if (layer.runs_backward)
            for (int t : trainable_tensors(layer)) order.push_back(t);
    }
    for (const LayerPlan& layer : plan_->layers())
        if (!layer.runs_backward)
            for (int t : trainable_tensors(layer)) order.push_back(t);
    return order;
}

void TrainingStep::optimize() {
    ErrorContext context("the RMSProp update");
    times_.run({-1, HB_PHASE_UPDATE, op::rmsprop}, [&] {
        kernels::rmsprop(parameters_.floats(), gradients_.floats(), square_averages_.floats(),
                         momentum_.floats(), weights_.update_copy(), plan_->parameter_floats(),
                         math::rmsprop_params(settings_.optimizer), stream_);
    });
}

void TrainingStep::parameters_changed() {
    weights_.refresh(stream_);
}

void TrainingStep::forward_layer(const LayerPlan& layer, DeviceLayer& device) {
    const Storage storage = mode_.storage();
    const void* x = value(layer.inputs[0]);
    void* y = const_cast<void*>(value(layer.writes));
    const bool nhwc = settings_.layout == Layout::nhwc;
    const int32_t l = index_of(layer);
    switch (layer.kind) {
        case HB_LAYER_CONV2D: {
            const ConvolutionDescriptors& d = *device.conv;
            const void* w = weights_.weight(tensor_plan(layer.weight));
            if (device.graph_forward)
                times_.run({l, HB_PHASE_FORWARD, op::cudnn_graph}, [&] {
                    device.graph_forward.run(handle_, x, w, y, arena(device.forward_workspace));
                });
            else
                times_.run({l, HB_PHASE_FORWARD, op::convolution_forward}, [&] {
                    HB_CHECK(cudnnConvolutionForward(
                        handle_, &one, d.x.get(), x, d.w.get(), w, d.forward.get(),
                        cudnnConvolutionFwdAlgo_t(device.algorithms.forward.algorithm),
                        arena(device.forward_workspace), request_bytes(device.forward_workspace),
                        &zero, d.y.get(), y));
                });
            if (layer.bias < 0) break;
            if (device.bias == Calls::own)
                times_.run({l, HB_PHASE_FORWARD, op::bias_forward}, [&] {
                    kernels::bias_forward(storage, y, tensor(layer.bias), layer.out, nhwc, stream_);
                });
            else
                times_.run({l, HB_PHASE_FORWARD, op::add_tensor}, [&] {
                    HB_CHECK(cudnnAddTensor(handle_, &one, d.bias.get(), tensor(layer.bias), &one,
                                            d.y.get(), y));
                });
            break;
        }
        case HB_LAYER_BATCHNORM:
            batchnorm_forward(layer, device, x, y);
            break;
        case HB_LAYER_RELU:
            times_.run({l, HB_PHASE_FORWARD, op::relu_forward}, [&] {
                kernels::relu_forward(storage, x, y, layer.out.elements(), stream_);
            });
            break;
        case HB_LAYER_MAXPOOL2D:
            times_.run({l, HB_PHASE_FORWARD, op::maxpool_forward},
                       [&] { kernels::maxpool_forward(storage, x, y, layer.in, nhwc, stream_); });
            break;
        case HB_LAYER_UPSAMPLE:
            times_.run({l, HB_PHASE_FORWARD, op::upsample_forward},
                       [&] { kernels::upsample_forward(storage, x, y, layer.in, nhwc, stream_); });
            break;
        case HB_LAYER_ADD: {
            std::vector<const void*> inputs;
            for (int v : layer.inputs) inputs.push_back(value(v));
            times_.run({l, HB_PHASE_FORWARD, op::add_forward}, [&] {
                kernels::add_forward(storage, inputs, y, layer.out.elements(), stream_);
            });
            break;
        }
        case HB_LAYER_MSE_LOSS:
            times_.run({l, HB_PHASE_FORWARD, op::mse_loss_forward}, [&] {
                kernels::mse_loss_forward(
                    storage, x, target_, layer.in.elements(), layer.loss_weight,
                    static_cast<double*>(losses_.get()) + layer.loss_slot, stream_);
            });
            break;
    }
}

void TrainingStep::batchnorm_forward(const LayerPlan& layer, DeviceLayer& device, const void* x,
                                     void* y) {
    float* saved = arena(layer.saved);
    const int64_t c = layer.in.c;
    const int32_t l = index_of(layer);
    switch (device.batchnorm) {
        case Calls::own:
            times_.run({l, HB_PHASE_FORWARD, op::own_batchnorm_forward}, [&] {
                kernels::batchnorm_forward(
                    mode_.storage(), x, y, layer.in, settings_.layout == Layout::nhwc,
                    batchnorm_tensors(layer), channel_scratch_.get(), stream_);
            });
            break;
        case Calls::cudnn_ex:
            times_.run({l, HB_PHASE_FORWARD, op::batchnorm_forward_ex}, [&] {
                HB_CHECK(cudnnBatchNormalizationForwardTrainingEx(
                    handle_, device.mode, batchnorm_ops(layer.fused_relu), &one, &zero,
                    device.x.get(), x, nullptr, nullptr, device.x.get(), y, device.parameters.get(),
                    tensor(layer.weight), tensor(layer.bias), layer.momentum,
                    tensor(layer.running_mean), tensor(layer.running_var), layer.eps, saved,
                    saved + c, layer.fused_relu ? relu_.get() : nullptr,
                    arena(device.bn_forward_workspace), request_bytes(device.bn_forward_workspace),
                    arena(device.reserve), request_bytes(device.reserve)));
            });
            break;
        case Calls::cudnn:
            times_.run({l, HB_PHASE_FORWARD, op::batchnorm_forward}, [&] {
                HB_CHECK(cudnnBatchNormalizationForwardTraining(
                    handle_, device.mode, &one, &zero, device.x.get(), x, device.x.get(), y,
                    device.parameters.get(), tensor(layer.weight), tensor(layer.bias),
                    layer.momentum, tensor(layer.running_mean), tensor(layer.running_var),
                    layer.eps, saved, saved + c));
            });
            break;
    }
}

void TrainingStep::backward_layer(const LayerPlan& layer, DeviceLayer& device) {
    const Storage storage = mode_.storage();
    const bool nhwc = settings_.layout == Layout::nhwc;
    const void* x = value(layer.inputs[0]);
    void* dx = layer.input_gradient[0] ? gradient(layer.inputs[0]) : nullptr;
    const bool accumulate = layer.accumulate[0];
    void* dy = layer.kind == HB_LAYER_MSE_LOSS ? nullptr : gradient(layer.writes);
    const int32_t l = index_of(layer);
    switch (layer.kind) {
        case HB_LAYER_CONV2D:
            convolution_backward(layer, device, x, dx, accumulate, dy);
            break;
        case HB_LAYER_BATCHNORM:
            batchnorm_backward(layer, device, x, dx, accumulate, dy);
            break;
        case HB_LAYER_RELU:
            if (dx)
                times_.run({l, HB_PHASE_BACKWARD_DATA, op::relu_backward}, [&] {
                    kernels::relu_backward(storage, value(layer.writes), dy, dx,
                                           layer.out.elements(), accumulate, stream_);
                });
            break;
        case HB_LAYER_MAXPOOL2D:
            if (dx)
                times_.run({l, HB_PHASE_BACKWARD_DATA, op::maxpool_backward}, [&] {
                    kernels::maxpool_backward(storage, x, dy, dx, layer.in, nhwc, accumulate,
                                              stream_);
                });
            break;
        case HB_LAYER_UPSAMPLE:
            if (dx)
                times_.run({l, HB_PHASE_BACKWARD_DATA, op::upsample_backward}, [&] {
                    kernels::upsample_backward(storage, dy, dx, layer.in, nhwc, accumulate,
                                               stream_);
                });
            break;
        case HB_LAYER_ADD: {
            std::vector<void*> outputs;
            for (size_t k = 0; k < layer.inputs.size(); ++k)
                outputs.push_back(layer.input_gradient[k] ? gradient(layer.inputs[k]) : nullptr);
            times_.run({l, HB_PHASE_BACKWARD_DATA, op::add_backward}, [&] {
                kernels::add_backward(storage, dy, outputs, layer.accumulate, layer.out.elements(),
                                      stream_);
            });
            break;
        }
        case HB_LAYER_MSE_LOSS:
            if (dx)
                times_.run({l, HB_PHASE_BACKWARD_DATA, op::mse_loss_backward}, [&] {
                    kernels::mse_loss_backward(storage, x, target_, dx, layer.in.elements(),
                                               layer.loss_weight, accumulate, stream_);
                });
            break;
    }
}

void TrainingStep::convolution_backward(const LayerPlan& layer, DeviceLayer& device, const void* x,
                                        void* dx, bool accumulate, const void* dy) {
    const ConvolutionDescriptors& d = *device.conv;
    const ConvolutionChoice& a = device.algorithms;
    const TensorPlan& weight = tensor_plan(layer.weight);
    const void* w = weights_.weight(weight);
    void* dw = weights_.gradient(weight);
    const int32_t l = index_of(layer);
    // The graph API's plans blend the input gradient as chosen at setup.
    if (dx && device.graph_backward_data)
        times_.run({l, HB_PHASE_BACKWARD_DATA, op::cudnn_graph}, [&] {
            device.graph_backward_data.run(handle_, dx, w, dy,
                                           arena(device.backward_data_workspace));
        });
    else if (dx)
        times_.run({l, HB_PHASE_BACKWARD_DATA, op::convolution_backward_data}, [&] {
            HB_CHECK(cudnnConvolutionBackwardData(
                handle_, &one, d.w.get(), w, d.y.get(), dy, d.backward_data.get(),
                cudnnConvolutionBwdDataAlgo_t(a.backward_data.algorithm),
                arena(device.backward_data_workspace),
                request_bytes(device.backward_data_workspace), blend(accumulate), d.x.get(), dx));
        });
    if (device.graph_backward_filter)
        times_.run({l, HB_PHASE_BACKWARD_WEIGHTS, op::cudnn_graph}, [&] {
            device.graph_backward_filter.run(handle_, x, dw, dy,
                                             arena(device.backward_filter_workspace));
        });
    else
        times_.run({l, HB_PHASE_BACKWARD_WEIGHTS, op::convolution_backward_filter}, [&] {
            HB_CHECK(cudnnConvolutionBackwardFilter(
                handle_, &one, d.x.get(), x, d.y.get(), dy, d.backward_filter.get(),
                cudnnConvolutionBwdFilterAlgo_t(a.backward_filter.algorithm),
                arena(device.backward_filter_workspace),
                request_bytes(device.backward_filter_workspace), &zero, d.w.get(), dw));
        });
    if (mode_.converts_weights())
        times_.run({l, HB_PHASE_REORDER, op::from_bf16}, [&] { weights_.widen(weight, stream_); });
    if (layer.bias < 0) return;
    if (device.bias == Calls::own)
        times_.run({l, HB_PHASE_BACKWARD_WEIGHTS, op::bias_backward}, [&] {
            kernels::bias_backward(mode_.storage(), dy, tensor_gradient(layer.bias), layer.out,
                                   settings_.layout == Layout::nhwc, channel_scratch_.get(),
                                   stream_);
        });
    else
        times_.run({l, HB_PHASE_BACKWARD_WEIGHTS, op::convolution_backward_bias}, [&] {
            HB_CHECK(cudnnConvolutionBackwardBias(handle_, &one, d.y.get(), dy, &zero, d.bias.get(),
                                                  tensor_gradient(layer.bias)));
        });
}

void TrainingStep::batchnorm_backward(const LayerPlan& layer, DeviceLayer& device, const void* x,
                                      void* dx, bool accumulate, const void* dy) {
    const float* saved = arena(layer.saved);
    const int64_t c = layer.in.c;
    const bool fused = layer.fused_relu;
    const int32_t l = index_of(layer);
    switch (device.batchnorm) {
        case Calls::own:
            times_.run({l, HB_PHASE_BACKWARD, op::own_batchnorm_backward}, [&] {
                kernels::batchnorm_backward(
                    mode_.storage(), x, value(layer.writes), dy, dx, accumulate,
                    tensor_gradient(layer.weight), tensor_gradient(layer.bias), layer.in,
                    settings_.layout == Layout::nhwc, batchnorm_tensors(layer),
                    channel_scratch_.get(), stream_);
            });
            break;
        case Calls::cudnn_ex: {
            void* written = device.gradient_scratch >= 0 ? arena(device.gradient_scratch) : dx;
            times_.run({l, HB_PHASE_BACKWARD, op::batchnorm_backward_ex}, [&] {
                HB_CHECK(cudnnBatchNormalizationBackwardEx(
                    handle_, device.mode, batchnorm_ops(fused), &one,
                    blend(dx && accumulate && written == dx), &one, &zero, device.x.get(), x,
                    fused ? device.x.get() : nullptr, fused ? value(layer.writes) : nullptr,
                    device.x.get(), dy, nullptr, nullptr, device.x.get(), written,
                    device.parameters.get(), tensor(layer.weight),
                    fused ? tensor(layer.bias) : nullptr, tensor_gradient(layer.weight),
                    tensor_gradient(layer.bias), layer.eps, saved, saved + c,
                    fused ? relu_.get() : nullptr, arena(device.bn_backward_workspace),
                    request_bytes(device.bn_backward_workspace), arena(device.reserve),
                    request_bytes(device.reserve)));
            });
            if (dx && written != dx)
                times_.run({l, HB_PHASE_BACKWARD_DATA, op::add_backward}, [&] {
                    kernels::add_backward(mode_.storage(), written, {dx}, {true},
                                          layer.in.elements(), stream_);
                });
            break;
        }
        case Calls::cudnn:
            times_.run({l, HB_PHASE_BACKWARD, op::batchnorm_backward}, [&] {
                HB_CHECK(cudnnBatchNormalizationBackward(
                    handle_, device.mode, &one, blend(dx && accumulate), &one, &zero,
                    device.x.get(), x, device.x.get(), dy, device.x.get(),
                    dx ? dx : arena(device.gradient_scratch), device.parameters.get(),
                    tensor(layer.weight), tensor_gradient(layer.weight),
                    tensor_gradient(layer.bias), layer.eps, saved, saved + c));
            });
            break;
    }
}

kernels::BatchNormTensors TrainingStep::batchnorm_tensors(const LayerPlan& layer) const {
    kernels::BatchNormTensors bn;
    bn.gamma = tensor(layer.weight);
    bn.beta = tensor(layer.bias);
    bn.running_mean = tensor(layer.running_mean);
    bn.running_var = tensor(layer.running_var);
    bn.saved = arena(layer.saved);
    bn.momentum = layer.momentum;
    bn.eps = layer.eps;
    bn.fused_relu = layer.fused_relu;
    return bn;
}

float* TrainingStep::arena(int request) const {
    if (request < 0) return nullptr;
    return reinterpret_cast<float*>(static_cast<char*>(arena_memory_.get()) +
                                    arena_.offsets[size_t(request)]);
}

size_t TrainingStep::request_bytes(int request) const {
    return request < 0 ? 0 : size_t(plan_->requests()[size_t(request)].bytes);
}

const void* TrainingStep::value(int v) const {
    if (v == plan_->input()) return input_;
    return arena(plan_->values()[size_t(v)].buffer);
}

void* TrainingStep::gradient(int v) const {
    return arena(plan_->values()[size_t(v)].gradient_buffer);
}

float* TrainingStep::tensor(int t) const {
    if (t < 0) return nullptr;
    const TensorPlan& tensor = plan_->tensors()[size_t(t)];
    return (tensor.trainable ? parameters_.floats() : statistics_.floats()) + tensor.offset;
}

float* TrainingStep::tensor_gradient(int t) const {
    if (t < 0) return nullptr;
    return gradients_.floats() + plan_->tensors()[size_t(t)].offset;
}

}  // namespace hb_cudnn
