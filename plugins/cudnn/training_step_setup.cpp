// The step's setup: the plan (built once, with the fusions probed on the device while it is
// planned), each layer's descriptors, algorithms and calls as the math mode says, the arena and
// the parameter blocks.
#include "training_step.hpp"

#include "channel_kernels.hpp"
#include "check.hpp"
#include "events.hpp"
#include "hb/plugin.hpp"
#include "kernels.hpp"

#include <algorithm>

namespace hb_cudnn {
namespace {

const float one = 1.0f, zero = 0.0f;

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
    plan_ = std::make_unique<Plan>(
        graph, mode_.storage(),
        [this](const LayerPlan& batchnorm) {
            return settings_.fuse_batchnorm_relu && fuse(batchnorm);
        },
        settings_.input_gradient);
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

StepCalls TrainingStep::calls() const {
    StepCalls calls;
    for (const DeviceLayer& device : layers_) {
        LayerCalls layer;
        layer.graph_convolution = bool(device.graph_forward);
        layer.bias = device.bias;
        layer.batchnorm = device.batchnorm;
        layer.gradient_scratch = device.gradient_scratch >= 0;
        calls.layers.push_back(layer);
    }
    calls.widens_weight_gradients = mode_.converts_weights();
    calls.placement = settings_.placement;
    calls.cuda_graphs = settings_.cuda_graphs;
    calls.nhwc = settings_.layout == Layout::nhwc;
    calls.bf16_input = mode_.storage() == Storage::bf16;
    return calls;
}

void TrainingStep::prepare_profiling() {
    if (times_.prepared()) return;
    ErrorContext context("the profiling events");
    times_ = OperationTimes(step_operations(*plan_, calls()), std::make_unique<EventPool>(stream_));
}

uint64_t TrainingStep::device_bytes() const {
    uint64_t bytes = weights_.device_bytes();
    for (const DeviceBuffer* b : {&arena_memory_, &parameters_, &gradients_, &square_averages_,
                                  &momentum_, &statistics_, &losses_, &channel_scratch_})
        bytes += b->bytes();
    return bytes;
}

}  // namespace hb_cudnn
