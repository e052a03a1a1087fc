// The training step on the device: the plan turned into cuDNN descriptors, measured algorithms,
// one arena for every transient buffer, and blocks for parameters, gradients, optimizer state
// and running statistics. Enqueues forward, backward and the optimizer on one stream without
// synchronising.
//
// The math mode (math_mode.hpp) decides at setup how each layer runs; execution follows those
// choices. In bf16 math, activations and their gradients are bfloat16; convolutions run on a
// bfloat16 copy of the float32 weights (written by each RMSProp update) and their weight gradients
// are widened into the float32 gradient block (convolution_weights.hpp); batch norm and the
// convolution bias are the backend's own kernels (channel_kernels.hpp), with float32 parameters
// and statistics.
//
// Each operation is enqueued through OperationTimes (operation_times.hpp) with its layer, phase
// and name, as step_operations (operations.hpp) lists them from calls(): timed between two events
// when the step is profiled, at the cost of one flag test when it is not.
//
// training_step_setup.cpp sets the step up (the plan with its fusions, descriptors, algorithms,
// memory), training_step.cpp runs it, training_step_manifest.cpp describes it.
#pragma once

#include "channel_kernels.hpp"
#include "convolution.hpp"
#include "convolution_weights.hpp"
#include "graph_convolution.hpp"
#include "handles.hpp"
#include "hb/json.hpp"
#include "math_mode.hpp"
#include "operation_times.hpp"
#include "operations.hpp"
#include "options.hpp"
#include "plan.hpp"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace hb_cudnn {

class TrainingStep {
public:
    TrainingStep(const hb_graph& graph, const Settings& settings, cudnnHandle_t handle,
                 cudaStream_t stream);

    const Plan& plan() const { return *plan_; }

    // `input` (graph input shape, in the step's storage) and `target` (target shape, float32),
    // both in the session's layout, on the device, valid until the step's work is complete.
    void forward(const void* input, const float* target);
    // `final`, when given, hears of each trainable tensor (its index) as soon as the work that
    // writes its gradient is enqueued, in gradient_order().
    void backward(const float* target, const std::function<void(int tensor)>& final = {});
    void optimize();  // also refreshes the bf16 copy of the parameters
    // The trainable tensors in the order backward() makes their gradients final: those of the
    // layers that run backward, in backward order, then the others, whose gradients stay zero.
    std::vector<int> gradient_order() const;
    // After the parameters were written from outside the step (load_state).
    void parameters_changed();

    // What setup chose, as far as it decides the operations a step enqueues (operations.hpp).
    StepCalls calls() const;
    // The times of the step's operations when profiled. prepare_profiling creates the pool of
    // events for step_operations once (outside any capture); later calls keep it.
    void prepare_profiling();
    OperationTimes& operation_times() { return times_; }

    float* parameters() const { return parameters_.floats(); }
    float* gradients() const { return gradients_.floats(); }
    float* square_averages() const { return square_averages_.floats(); }
    float* statistics() const { return statistics_.floats(); }
    const double* losses() const { return static_cast<const double*>(losses_.get()); }
    // The gradient of the last backward's input batch, in the step's layout and storage; null
    // when the plan has no buffer for it (Plan::input_gradient).
    const void* input_gradient() const { return gradient(plan_->input()); }

    uint64_t device_bytes() const;  // everything this object allocated
    int64_t arena_bytes() const { return arena_.bytes; }
    int64_t arena_requested_bytes() const { return arena_.requested_bytes; }
    // The step's members of the session's manifest: arena, fusions, batch norm, convolutions.
    void add_manifest(hb::JsonObject& manifest) const;

private:
    struct DeviceLayer {
        // conv2d
        std::unique_ptr<ConvolutionDescriptors> conv;
        ConvolutionChoice algorithms;  // what runs, by either API
        GraphConvolution graph_forward, graph_backward_data, graph_backward_filter;
        int forward_workspace = -1, backward_data_workspace = -1, backward_filter_workspace = -1;
        Calls bias = Calls::cudnn;
        // batchnorm
        Calls batchnorm = Calls::cudnn;
        TensorDescriptor x, parameters;  // cuDNN's batch norm
        cudnnBatchNormMode_t mode = CUDNN_BATCHNORM_SPATIAL;
        int bn_forward_workspace = -1, bn_backward_workspace = -1, reserve = -1;  // Ex calls
        // Where the input gradient is written first: when the input needs none (discarded), or,
        // in the Ex path, when it is added to an existing one.
        int gradient_scratch = -1;
    };

    struct BatchNormExSizes {
        size_t forward = 0, backward = 0, reserve = 0;
    };

    // Setup (training_step_setup.cpp).
    // Whether a fusion candidate applies its ReLU, asked while the plan is built: always with the
    // own batch norm; with cuDNN's, when its Ex calls run the fused shape (probe_batchnorm_ex).
    bool fuse(const LayerPlan& batchnorm);
    cudnnBatchNormMode_t batchnorm_mode(bool fused_relu) const;
    BatchNormExSizes batchnorm_ex_sizes(cudnnBatchNormMode_t mode, bool fused_relu,
                                        cudnnTensorDescriptor_t x,
                                        cudnnTensorDescriptor_t parameters) const;
    // Empty when a forward and backward batch norm through the Ex API runs for `shape` (with the
    // ReLU when `fused_relu`), else cuDNN's reason; each shape is tried once.
    std::string probe_batchnorm_ex(const Shape& shape, bool fused_relu);
    void set_up_layers();
    void set_up_batchnorm(const LayerPlan& layer, DeviceLayer& device);
    void allocate();

    // Execution (training_step.cpp).
    float* arena(int request) const;
    size_t request_bytes(int request) const;
    const void* value(int v) const;
    void* gradient(int v) const;
    float* tensor(int t) const;
    float* tensor_gradient(int t) const;
    const TensorPlan& tensor_plan(int t) const { return plan_->tensors()[size_t(t)]; }
    // The trainable tensors of a layer that gradient_order() lists with it.
    std::vector<int> trainable_tensors(const LayerPlan& layer) const;
    void forward_layer(const LayerPlan& layer, DeviceLayer& device);
    void batchnorm_forward(const LayerPlan& layer, DeviceLayer& device, const void* x, void* y);
    void backward_layer(const LayerPlan& layer, DeviceLayer& device);
    void convolution_backward(const LayerPlan& layer, DeviceLayer& device, const void* x, void* dx,
                              bool accumulate, const void* dy);
    void batchnorm_backward(const LayerPlan& layer, DeviceLayer& device, const void* x, void* dx,
                            bool accumulate, const void* dy);
    kernels::BatchNormTensors batchnorm_tensors(const LayerPlan& layer) const;
    // The index of a layer of the plan (its IR layer), for its operations.
    int32_t index_of(const LayerPlan& layer) const {
        return static_cast<int32_t>(&layer - plan_->layers().data());
    }

    Settings settings_;
    MathMode mode_;
    cudnnHandle_t handle_;
    cudaStream_t stream_;
    std::unique_ptr<Plan> plan_;
    std::vector<DeviceLayer> layers_;
    std::vector<std::string> fusion_notes_;
    std::map<std::string, std::string> probed_;  // probe_batchnorm_ex's answers by shape and ops
    std::vector<std::string> batchnorm_notes_;   // layers on the legacy API, and why
    ActivationDescriptor relu_;
    ArenaPlan arena_;
    DeviceBuffer arena_memory_, parameters_, gradients_, square_averages_, momentum_, statistics_,
        losses_;
    ConvolutionWeights weights_;
    DeviceBuffer channel_scratch_;  // the own per-channel kernels' scratch
    int64_t channel_scratch_bytes_ = 0;
    size_t workspace_limit_ = 0;
    int measured_shapes_ = 0;
    const void* input_ = nullptr;
    const float* target_ = nullptr;
    OperationTimes times_;
};

// Batch norm's cuDNN operations: with the ReLU after it when fused.
inline cudnnBatchNormOps_t batchnorm_ops(bool fused_relu) {
    return fused_relu ? CUDNN_BATCHNORM_OPS_BN_ACTIVATION : CUDNN_BATCHNORM_OPS_BN;
}

}  // namespace hb_cudnn
