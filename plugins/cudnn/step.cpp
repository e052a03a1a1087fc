#include "step.hpp"

#include "channel_kernels.hpp"
#include "check.hpp"
#include "hb/plugin.hpp"
#include "kernels.hpp"

#include <algorithm>

namespace cudnn_backend {
namespace {

const float one = 1.0f, zero = 0.0f;

const float* blend(bool accumulate) {
    return accumulate ? &one : &zero;
}

const char* math_name(cudnnMathType_t m) {
    switch (m) {
        case CUDNN_DEFAULT_MATH:
            return "default";
        case CUDNN_TENSOR_OP_MATH:
            return "tensor_op";
        case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION:
            return "tensor_op_allow_conversion";
        case CUDNN_FMA_MATH:
            return "fma";
    }
    return "?";
}

// Device scratch for one trial of a fused BN+ReLU, freed when the trial ends.
struct Trial {
    DeviceBuffer x, y, dy, dx, parameters, workspace, reserve;
};

}  // namespace

TrainingStep::TrainingStep(const hb_graph& graph, const Settings& settings, cudnnHandle_t handle,
                           cudaStream_t stream)
    : settings_(settings), mode_(settings.math), handle_(handle), stream_(stream) {
    relu_ = make_activation_descriptor();
    HB_CHECK(cudnnSetActivationDescriptor(relu_.get(), CUDNN_ACTIVATION_RELU,
                                          CUDNN_NOT_PROPAGATE_NAN, 0.0));
    plan_ = std::make_unique<Plan>(graph, mode_.storage(), [this](const LayerPlan& batchnorm) {
        return settings_.fused_bn_relu && fuse(batchnorm);
    });
    size_t free_bytes = 0, total_bytes = 0;
    HB_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    workspace_limit_ = std::min<size_t>(size_t(1) << 30, free_bytes / 4);
    set_up_layers();
    allocate();
}

bool TrainingStep::fuse(const LayerPlan& batchnorm) {
    // The backend's own batch norm fuses every candidate; cuDNN's is probed.
    if (mode_.own_channel_kernels()) return true;
    // cuDNN fuses the ReLU in the Ex calls only.
    if (settings_.batchnorm == BatchNormApi::legacy) {
        fusion_notes_.push_back(batchnorm.name + ": not fused, option batchnorm is legacy");
        return false;
    }
    const std::string declined = probe_batchnorm_ex(batchnorm.in, true);
    if (!declined.empty())
        fusion_notes_.push_back(batchnorm.name + ": not fused, cuDNN declined: " + declined);
    return declined.empty();
}

std::string TrainingStep::probe_batchnorm_ex(const Shape& shape, bool fused_relu) {
    const std::string key = to_string(shape) + (fused_relu ? " bn+relu" : " bn");
    auto known = probed_.find(key);
    if (known != probed_.end()) return known->second;
    std::string declined;
    // The workspace queries alone do not tell whether cuDNN supports the combination of layout,
    // data type, mode and operation: run one forward and backward on scratch memory.
    try {
        ErrorContext context("the batch norm (Ex) trial for " + key);
        TensorDescriptor x = make_tensor_descriptor(), p = make_tensor_descriptor();
        set_tensor(x.get(), shape, settings_.layout);
        const cudnnBatchNormMode_t mode = batchnorm_mode(fused_relu);
        HB_CHECK(cudnnDeriveBNTensorDescriptor(p.get(), x.get(), mode));
        const BatchNormExSizes sizes = batchnorm_ex_sizes(mode, fused_relu, x.get(), p.get());
        const size_t bytes = size_t(shape.elements()) * sizeof(float);
        const int64_t c = shape.c;
        Trial t{DeviceBuffer(bytes),
                DeviceBuffer(bytes),
                DeviceBuffer(bytes),
                DeviceBuffer(bytes),
                DeviceBuffer(size_t(8 * c) * sizeof(float)),
                DeviceBuffer(std::max(sizes.forward, sizes.backward)),
                DeviceBuffer(sizes.reserve)};
        HB_CHECK(cudaMemsetAsync(t.x.get(), 0, bytes, stream_));
        HB_CHECK(cudaMemsetAsync(t.dy.get(), 0, bytes, stream_));
        HB_CHECK(cudaMemsetAsync(t.parameters.get(), 0, t.parameters.bytes(), stream_));
        float* q = t.parameters.floats();
        const cudnnBatchNormOps_t ops = batchnorm_ops(fused_relu);
        cudnnActivationDescriptor_t relu = fused_relu ? relu_.get() : nullptr;
        HB_CHECK(cudnnBatchNormalizationForwardTrainingEx(
            handle_, mode, ops, &one, &zero, x.get(), t.x.get(), nullptr, nullptr, x.get(),
            t.y.get(), p.get(), q, q + c, 0.1, q + 2 * c, q + 3 * c, 1e-5, q + 4 * c, q + 5 * c,
            relu, t.workspace.get(), sizes.forward, t.reserve.get(), sizes.reserve));
        HB_CHECK(cudnnBatchNormalizationBackwardEx(
            handle_, mode, ops, &one, &zero, &one, &zero, x.get(), t.x.get(),
            fused_relu ? x.get() : nullptr, fused_relu ? t.y.get() : nullptr, x.get(), t.dy.get(),
            nullptr, nullptr, x.get(), t.dx.get(), p.get(), q, fused_relu ? q + c : nullptr,
            q + 6 * c, q + 7 * c, 1e-5, q + 4 * c, q + 5 * c, relu, t.workspace.get(),
            sizes.backward, t.reserve.get(), sizes.reserve));
        HB_CHECK(cudaStreamSynchronize(stream_));
    } catch (const hb::Error& e) {
        if (e.status() == HB_OUT_OF_MEMORY) throw;
        // A refused trial may leave a launch error behind; clear it so later calls start clean.
        cudaGetLastError();
        declined = e.what();
    }
    probed_.emplace(key, declined);
    return declined;
}

cudnnBatchNormMode_t TrainingStep::batchnorm_mode(bool fused_relu) const {
    // The persistent kernels are the fast ones for NHWC and the only ones with a fused ReLU; in
    // NCHW the plain spatial mode, as PyTorch chooses them.
    return fused_relu || settings_.layout == Layout::nhwc ? CUDNN_BATCHNORM_SPATIAL_PERSISTENT
                                                          : CUDNN_BATCHNORM_SPATIAL;
}

TrainingStep::BatchNormExSizes TrainingStep::batchnorm_ex_sizes(
    cudnnBatchNormMode_t mode, bool fused_relu, cudnnTensorDescriptor_t x,
    cudnnTensorDescriptor_t parameters) const {
    const cudnnBatchNormOps_t ops = batchnorm_ops(fused_relu);
    cudnnActivationDescriptor_t relu = fused_relu ? relu_.get() : nullptr;
    BatchNormExSizes sizes;
    HB_CHECK(cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
        handle_, mode, ops, x, nullptr, x, parameters, relu, &sizes.forward));
    HB_CHECK(cudnnGetBatchNormalizationBackwardExWorkspaceSize(
        handle_, mode, ops, x, x, x, nullptr, x, parameters, relu, &sizes.backward));
    HB_CHECK(cudnnGetBatchNormalizationTrainingExReserveSpaceSize(handle_, mode, ops, relu, x,
                                                                  &sizes.reserve));
    return sizes;
}

void TrainingStep::set_up_layers() {
    Plan& plan = *plan_;
    layers_.resize(plan.layers().size());
    const bool graph_api = settings_.convolutions == ConvolutionApi::graph;
    const bool nhwc = settings_.layout == Layout::nhwc;
    std::unique_ptr<GraphConvolutionSearch> graph;
    std::unique_ptr<AlgorithmSearch> legacy;
    if (graph_api)
        graph = std::make_unique<GraphConvolutionSearch>(handle_, plan, workspace_limit_, mode_,
                                                         settings_.layout);
    else
        legacy = std::make_unique<AlgorithmSearch>(handle_, plan, workspace_limit_, mode_);
    for (size_t i = 0; i < layers_.size(); ++i) {
        const LayerPlan& layer = plan.layers()[i];
        DeviceLayer& device = layers_[i];
        ErrorContext context("layer '" + layer.name + "'");
        if (layer.kind == HB_LAYER_CONV2D) {
            device.conv = std::make_unique<ConvolutionDescriptors>(
                make_convolution_descriptors(layer, settings_.layout, mode_));
            if (graph_api) {
                device.graph_forward = graph->choose(layer, Direction::forward, false);
                if (layer.input_gradient[0])
                    device.graph_backward_data =
                        graph->choose(layer, Direction::backward_data, layer.accumulate[0]);
                device.graph_backward_filter =
                    graph->choose(layer, Direction::backward_filter, false);
                device.algorithms.forward = device.graph_forward.choice();
                device.algorithms.backward_data = device.graph_backward_data.choice();
                device.algorithms.backward_filter = device.graph_backward_filter.choice();
            } else {
                device.algorithms = legacy->choose(layer, *device.conv, layer.input_gradient[0]);
            }
            const ConvolutionChoice& a = device.algorithms;
            if (a.forward.workspace)
                device.forward_workspace =
                    plan.add_request(int64_t(a.forward.workspace), layer.forward_time,
                                     layer.forward_time, layer.name + " forward workspace");
            const size_t backward =
                std::max(layer.input_gradient[0] ? a.backward_data.workspace : size_t(0),
                         a.backward_filter.workspace);
            if (backward)
                device.backward_data_workspace = device.backward_filter_workspace =
                    plan.add_request(int64_t(backward), layer.backward_time, layer.backward_time,
                                     layer.name + " backward workspace");
            device.bias = mode_.own_channel_kernels() ? Calls::own : Calls::cudnn;
            if (device.bias == Calls::own && layer.bias >= 0)
                channel_scratch_bytes_ = std::max(channel_scratch_bytes_,
                                                  kernels::channel_scratch_bytes(layer.out, nhwc));
        } else if (layer.kind == HB_LAYER_BATCHNORM) {
            set_up_batchnorm(layer, device);
        }
    }
    measured_shapes_ = graph_api ? graph->measured() : legacy->measured();
}

void TrainingStep::set_up_batchnorm(const LayerPlan& layer, DeviceLayer& device) {
    Plan& plan = *plan_;
    if (mode_.own_channel_kernels()) {
        device.batchnorm = Calls::own;
        channel_scratch_bytes_ =
            std::max(channel_scratch_bytes_,
                     kernels::channel_scratch_bytes(layer.in, settings_.layout == Layout::nhwc));
        return;
    }
    device.x = make_tensor_descriptor();
    device.parameters = make_tensor_descriptor();
    set_tensor(device.x.get(), layer.in, settings_.layout);
    device.mode = batchnorm_mode(layer.fused_relu);
    HB_CHECK(cudnnDeriveBNTensorDescriptor(device.parameters.get(), device.x.get(), device.mode));
    // The Ex API with workspace and reserve space is cuDNN's fast path (and PyTorch's); the
    // legacy calls remain for shapes it declines. A fused ReLU was accepted by the same trial.
    const std::string declined = settings_.batchnorm == BatchNormApi::legacy
                                     ? "option batchnorm is legacy"
                                 : layer.fused_relu ? std::string()
                                                    : probe_batchnorm_ex(layer.in, false);
    device.batchnorm = declined.empty() ? Calls::cudnn_ex : Calls::cudnn;
    if (device.batchnorm == Calls::cudnn)
        batchnorm_notes_.push_back(layer.name + ": legacy API, not Ex: " + declined);
    if (device.batchnorm == Calls::cudnn_ex) {
        const BatchNormExSizes sizes = batchnorm_ex_sizes(device.mode, layer.fused_relu,
                                                          device.x.get(), device.parameters.get());
        if (sizes.forward)
            device.bn_forward_workspace =
                plan.add_request(int64_t(sizes.forward), layer.forward_time, layer.forward_time,
                                 layer.name + " forward workspace");
        if (sizes.backward)
            device.bn_backward_workspace =
                plan.add_request(int64_t(sizes.backward), layer.backward_time, layer.backward_time,
                                 layer.name + " backward workspace");
        if (sizes.reserve)
            device.reserve = plan.add_request(int64_t(sizes.reserve), layer.forward_time,
                                              layer.backward_time, layer.name + " reserve space");
    }
    // The persistent kernels write the input gradient with betaDataDiff = 0, as PyTorch calls
    // them, and it is added to an existing one in a separate pass; the spatial ones blend it in.
    if (!layer.input_gradient[0] || (device.batchnorm == Calls::cudnn_ex && layer.accumulate[0] &&
                                     device.mode == CUDNN_BATCHNORM_SPATIAL_PERSISTENT))
        device.gradient_scratch =
            plan.add_request(layer.in.elements() * int64_t(sizeof(float)), layer.backward_time,
                             layer.backward_time, layer.name + " input gradient scratch");
}

// The arena as planned, then the blocks: parameters, their gradients, optimizer state,
// statistics and losses in float32, the convolutions' copies of the weights and gradients where
// the math mode converts them, and the own per-channel kernels' scratch. All start zeroed, the
// square averages at their initial value.
void TrainingStep::allocate() {
    {
        ErrorContext context("the arena");
        arena_ = plan_arena(plan_->requests());
        arena_memory_ = DeviceBuffer(size_t(arena_.bytes));
    }
    ErrorContext context("the parameter blocks");
    const size_t p = size_t(plan_->parameter_floats()) * sizeof(float);
    parameters_ = DeviceBuffer(p);
    gradients_ = DeviceBuffer(p);
    square_averages_ = DeviceBuffer(p);
    if (settings_.optimizer.momentum != 0) momentum_ = DeviceBuffer(p);
    statistics_ = DeviceBuffer(size_t(plan_->statistics_floats()) * sizeof(float));
    losses_ = DeviceBuffer(size_t(std::max(plan_->loss_count(), 1)) * sizeof(double));
    weights_ = ConvolutionWeights(mode_, parameters_.floats(), gradients_.floats(),
                                  plan_->parameter_floats());
    channel_scratch_ = DeviceBuffer(size_t(channel_scratch_bytes_));
    for (const DeviceBuffer* b : {&parameters_, &gradients_, &momentum_, &statistics_, &losses_})
        if (b->bytes()) HB_CHECK(cudaMemsetAsync(b->get(), 0, b->bytes(), stream_));
    weights_.clear(stream_);
    kernels::fill(square_averages_.floats(), settings_.optimizer.initial_square_average,
                  plan_->parameter_floats(), stream_);
    HB_CHECK(cudaStreamSynchronize(stream_));
}

uint64_t TrainingStep::device_bytes() const {
    uint64_t bytes = weights_.device_bytes();
    for (const DeviceBuffer* b : {&arena_memory_, &parameters_, &gradients_, &square_averages_,
                                  &momentum_, &statistics_, &losses_, &channel_scratch_})
        bytes += b->bytes();
    return bytes;
}

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

void TrainingStep::backward(const float* target) {
    target_ = target;
    for (size_t i = layers_.size(); i-- > 0;) {
        const LayerPlan& layer = plan_->layers()[i];
        if (layer.absorbed) continue;
        ErrorContext context("layer '" + layer.name + "' (backward)");
        backward_layer(layer, layers_[i]);
    }
}

void TrainingStep::optimize() {
    ErrorContext context("the RMSProp update");
    const hb_optimizer& o = settings_.optimizer;
    math::RmsPropParams p;
    p.learning_rate = o.learning_rate;
    p.alpha = o.alpha;
    p.eps = o.eps;
    p.momentum = o.momentum;
    p.weight_decay = o.weight_decay;
    p.torch = o.variant == HB_RMSPROP_TORCH;
    kernels::rmsprop(parameters_.floats(), gradients_.floats(), square_averages_.floats(),
                     momentum_.floats(), weights_.update_copy(), plan_->parameter_floats(), p,
                     stream_);
}

void TrainingStep::parameters_changed() {
    weights_.refresh(stream_);
}

void TrainingStep::forward_layer(const LayerPlan& layer, DeviceLayer& device) {
    const Storage storage = mode_.storage();
    const void* x = value(layer.inputs[0]);
    void* y = const_cast<void*>(value(layer.writes));
    const bool nhwc = settings_.layout == Layout::nhwc;
    switch (layer.kind) {
        case HB_LAYER_CONV2D: {
            const ConvolutionDescriptors& d = *device.conv;
            const void* w = weights_.weight(tensor_plan(layer.weight));
            if (device.graph_forward)
                device.graph_forward.run(handle_, x, w, y, arena(device.forward_workspace));
            else
                HB_CHECK(cudnnConvolutionForward(
                    handle_, &one, d.x.get(), x, d.w.get(), w, d.forward.get(),
                    cudnnConvolutionFwdAlgo_t(device.algorithms.forward.algorithm),
                    arena(device.forward_workspace), request_bytes(device.forward_workspace), &zero,
                    d.y.get(), y));
            if (layer.bias < 0) break;
            if (device.bias == Calls::own)
                kernels::bias_forward(storage, y, tensor(layer.bias), layer.out, nhwc, stream_);
            else
                HB_CHECK(cudnnAddTensor(handle_, &one, d.bias.get(), tensor(layer.bias), &one,
                                        d.y.get(), y));
            break;
        }
        case HB_LAYER_BATCHNORM:
            batchnorm_forward(layer, device, x, y);
            break;
        case HB_LAYER_RELU:
            kernels::relu_forward(storage, x, y, layer.out.elements(), stream_);
            break;
        case HB_LAYER_MAXPOOL2D:
            kernels::maxpool_forward(storage, x, y, layer.in, nhwc, stream_);
            break;
        case HB_LAYER_UPSAMPLE:
            kernels::upsample_forward(storage, x, y, layer.in, nhwc, stream_);
            break;
        case HB_LAYER_ADD: {
            std::vector<const void*> inputs;
            for (int v : layer.inputs) inputs.push_back(value(v));
            kernels::add_forward(storage, inputs, y, layer.out.elements(), stream_);
            break;
        }
        case HB_LAYER_MSE_LOSS:
            kernels::mse_loss_forward(storage, x, target_, layer.in.elements(), layer.loss_weight,
                                      static_cast<double*>(losses_.get()) + layer.loss_slot,
                                      stream_);
            break;
    }
}

void TrainingStep::batchnorm_forward(const LayerPlan& layer, DeviceLayer& device, const void* x,
                                     void* y) {
    float* saved = arena(layer.saved);
    const int64_t c = layer.in.c;
    switch (device.batchnorm) {
        case Calls::own:
            kernels::batchnorm_forward(mode_.storage(), x, y, layer.in,
                                       settings_.layout == Layout::nhwc, batchnorm_tensors(layer),
                                       channel_scratch_.get(), stream_);
            break;
        case Calls::cudnn_ex:
            HB_CHECK(cudnnBatchNormalizationForwardTrainingEx(
                handle_, device.mode, batchnorm_ops(layer.fused_relu), &one, &zero, device.x.get(),
                x, nullptr, nullptr, device.x.get(), y, device.parameters.get(),
                tensor(layer.weight), tensor(layer.bias), layer.momentum,
                tensor(layer.running_mean), tensor(layer.running_var), layer.eps, saved, saved + c,
                layer.fused_relu ? relu_.get() : nullptr, arena(device.bn_forward_workspace),
                request_bytes(device.bn_forward_workspace), arena(device.reserve),
                request_bytes(device.reserve)));
            break;
        case Calls::cudnn:
            HB_CHECK(cudnnBatchNormalizationForwardTraining(
                handle_, device.mode, &one, &zero, device.x.get(), x, device.x.get(), y,
                device.parameters.get(), tensor(layer.weight), tensor(layer.bias), layer.momentum,
                tensor(layer.running_mean), tensor(layer.running_var), layer.eps, saved,
                saved + c));
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
    if (layer.zero_output_gradient && dy)
        HB_CHECK(
            cudaMemsetAsync(dy, 0, size_t(layer.out.elements() * element_bytes(storage)), stream_));
    switch (layer.kind) {
        case HB_LAYER_CONV2D:
            convolution_backward(layer, device, x, dx, accumulate, dy);
            break;
        case HB_LAYER_BATCHNORM:
            batchnorm_backward(layer, device, x, dx, accumulate, dy);
            break;
        case HB_LAYER_RELU:
            if (dx)
                kernels::relu_backward(storage, value(layer.writes), dy, dx, layer.out.elements(),
                                       accumulate, stream_);
            break;
        case HB_LAYER_MAXPOOL2D:
            if (dx)
                kernels::maxpool_backward(storage, x, dy, dx, layer.in, nhwc, accumulate, stream_);
            break;
        case HB_LAYER_UPSAMPLE:
            if (dx)
                kernels::upsample_backward(storage, dy, dx, layer.in, nhwc, accumulate, stream_);
            break;
        case HB_LAYER_ADD: {
            std::vector<void*> outputs;
            for (size_t k = 0; k < layer.inputs.size(); ++k)
                outputs.push_back(layer.input_gradient[k] ? gradient(layer.inputs[k]) : nullptr);
            kernels::add_backward(storage, dy, outputs, layer.accumulate, layer.out.elements(),
                                  stream_);
            break;
        }
        case HB_LAYER_MSE_LOSS:
            if (dx)
                kernels::mse_loss_backward(storage, x, target_, dx, layer.in.elements(),
                                           layer.loss_weight, accumulate, stream_);
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
    // The graph API's plans blend the input gradient as chosen at setup.
    if (dx && device.graph_backward_data)
        device.graph_backward_data.run(handle_, dx, w, dy, arena(device.backward_data_workspace));
    else if (dx)
        HB_CHECK(cudnnConvolutionBackwardData(
            handle_, &one, d.w.get(), w, d.y.get(), dy, d.backward_data.get(),
            cudnnConvolutionBwdDataAlgo_t(a.backward_data.algorithm),
            arena(device.backward_data_workspace), request_bytes(device.backward_data_workspace),
            blend(accumulate), d.x.get(), dx));
    if (device.graph_backward_filter)
        device.graph_backward_filter.run(handle_, x, dw, dy,
                                         arena(device.backward_filter_workspace));
    else
        HB_CHECK(cudnnConvolutionBackwardFilter(
            handle_, &one, d.x.get(), x, d.y.get(), dy, d.backward_filter.get(),
            cudnnConvolutionBwdFilterAlgo_t(a.backward_filter.algorithm),
            arena(device.backward_filter_workspace),
            request_bytes(device.backward_filter_workspace), &zero, d.w.get(), dw));
    weights_.widen(weight, stream_);
    if (layer.bias < 0) return;
    if (device.bias == Calls::own)
        kernels::bias_backward(mode_.storage(), dy, tensor_gradient(layer.bias), layer.out,
                               settings_.layout == Layout::nhwc, channel_scratch_.get(), stream_);
    else
        HB_CHECK(cudnnConvolutionBackwardBias(handle_, &one, d.y.get(), dy, &zero, d.bias.get(),
                                              tensor_gradient(layer.bias)));
}

void TrainingStep::batchnorm_backward(const LayerPlan& layer, DeviceLayer& device, const void* x,
                                      void* dx, bool accumulate, const void* dy) {
    const float* saved = arena(layer.saved);
    const int64_t c = layer.in.c;
    const bool fused = layer.fused_relu;
    switch (device.batchnorm) {
        case Calls::own:
            kernels::batchnorm_backward(mode_.storage(), x, value(layer.writes), dy, dx, accumulate,
                                        tensor_gradient(layer.weight), tensor_gradient(layer.bias),
                                        layer.in, settings_.layout == Layout::nhwc,
                                        batchnorm_tensors(layer), channel_scratch_.get(), stream_);
            break;
        case Calls::cudnn_ex: {
            void* written = device.gradient_scratch >= 0 ? arena(device.gradient_scratch) : dx;
            HB_CHECK(cudnnBatchNormalizationBackwardEx(
                handle_, device.mode, batchnorm_ops(fused), &one,
                blend(dx && accumulate && written == dx), &one, &zero, device.x.get(), x,
                fused ? device.x.get() : nullptr, fused ? value(layer.writes) : nullptr,
                device.x.get(), dy, nullptr, nullptr, device.x.get(), written,
                device.parameters.get(), tensor(layer.weight), fused ? tensor(layer.bias) : nullptr,
                tensor_gradient(layer.weight), tensor_gradient(layer.bias), layer.eps, saved,
                saved + c, fused ? relu_.get() : nullptr, arena(device.bn_backward_workspace),
                request_bytes(device.bn_backward_workspace), arena(device.reserve),
                request_bytes(device.reserve)));
            if (dx && written != dx)
                kernels::add_backward(mode_.storage(), written, {dx}, {true}, layer.in.elements(),
                                      stream_);
            break;
        }
        case Calls::cudnn:
            HB_CHECK(cudnnBatchNormalizationBackward(
                handle_, device.mode, &one, blend(dx && accumulate), &one, &zero, device.x.get(), x,
                device.x.get(), dy, device.x.get(), dx ? dx : arena(device.gradient_scratch),
                device.parameters.get(), tensor(layer.weight), tensor_gradient(layer.weight),
                tensor_gradient(layer.bias), layer.eps, saved, saved + c));
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

void TrainingStep::add_manifest(hb::JsonObject& manifest) const {
    hb::JsonArray fusions, convolutions, declined, legacy;
    for (const LayerPlan& l : plan_->layers())
        if (l.fused_relu) fusions.add_string(l.name + ": batchnorm+relu");
    for (const std::string& note : fusion_notes_) declined.add_string(note);
    for (const std::string& note : batchnorm_notes_) legacy.add_string(note);
    int ex = 0;
    for (const DeviceLayer& d : layers_) ex += d.batchnorm == Calls::cudnn_ex ? 1 : 0;
    auto direction = [](const AlgorithmChoice& c) {
        return hb::JsonObject()
            .add_string("algorithm", c.name)
            .add("workspace_bytes", uint64_t{c.workspace})
            .add_string("math", math_name(c.math))
            .add("measured_ms", double{c.milliseconds})
            .str();
    };
    for (size_t i = 0; i < layers_.size(); ++i) {
        const LayerPlan& l = plan_->layers()[i];
        if (l.kind != HB_LAYER_CONV2D) continue;
        const ConvolutionChoice& a = layers_[i].algorithms;
        hb::JsonObject c;
        c.add_string("layer", l.name).add("forward", direction(a.forward));
        if (l.input_gradient[0]) c.add("backward_data", direction(a.backward_data));
        c.add("backward_filter", direction(a.backward_filter));
        convolutions.add(c.str());
    }
    manifest.add_string("activation_type", mode_.activation_type())
        .add("arena_bytes", arena_.bytes)
        .add("arena_requested_bytes", arena_.requested_bytes)
        .add("arena_buffers", uint64_t{plan_->requests().size()})
        .add("workspace_limit_bytes", uint64_t{workspace_limit_})
        .add("measured_convolution_shapes", measured_shapes_)
        .add("fusions", fusions.str())
        .add("fusions_declined", declined.str())
        .add("batchnorm_legacy", legacy.str())
        .add("batchnorm_ex_layers", ex)
        .add("convolutions", convolutions.str());
}

}  // namespace cudnn_backend
