// The operations one training step enqueues on the session's stream, in order, each with the IR
// layer it belongs to, its phase and its name, worked out on the host from the plan and the
// calls setup chose for each layer: what a profiled step reports (docs/design.md §3 "Profiling").
// training_step.cpp and session.cpp enqueue them and name each one as they do; OperationTimes
// (operation_times.hpp) holds them to this list.
#pragma once

#include "hb/plugin.h"
#include "options.hpp"
#include "plan.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace hb_cudnn {

// Who computes a batch norm or a convolution's bias, chosen at setup: cuDNN (a batch norm through
// its plain calls, or its Ex calls with workspace and reserve space), or the backend's own kernels
// (MathMode::own_channel_kernels).
enum class Calls { cudnn, cudnn_ex, own };

// One operation of the step: a library call, one of the backend's own kernels, or a copy. The
// name is a literal (what ran: the cuDNN call, the own kernel's function, the copy's direction).
struct Operation {
    int32_t layer = -1;  // index into the plan's (the IR's) layers, or -1
    hb_phase phase = HB_PHASE_OTHER;
    const char* name = "";
};
bool operator==(const Operation& a, const Operation& b);
inline bool operator!=(const Operation& a, const Operation& b) {
    return !(a == b);
}
// "layer 3 backward_data cudnnConvolutionBackwardData", for messages.
std::string to_string(const Operation& operation);

// What setup chose for one layer, as far as it changes the operations the step enqueues.
struct LayerCalls {
    bool graph_convolution = false;  // conv2d: cuDNN's graph API, else its legacy calls
    Calls bias = Calls::cudnn;       // conv2d with a bias: cuDNN or own kernels
    Calls batchnorm = Calls::cudnn;
    // batchnorm: its input gradient is written to scratch first (when the input needs none, or,
    // in the Ex path, when it is added to an existing one in a separate pass).
    bool gradient_scratch = false;
};

// What the session does around the layers, fixed at session creation.
struct StepCalls {
    std::vector<LayerCalls> layers;        // one per plan layer
    bool widens_weight_gradients = false;  // bf16: each weight gradient is widened to float32
    hb_placement placement = HB_PLACEMENT_DEVICE;
    bool cuda_graphs = false;
    bool nhwc = false;
    bool bf16_input = false;  // the step reads its input as bf16 (converted each step with host
                              // placement)
};

// The step's operations in the order the session enqueues them, split where a captured step
// (the cuda_graphs option) begins and ends: the batch's copies before it, the graph's
// operations, the losses' copy back after it.
struct StepOperations {
    std::vector<Operation> operations;
    size_t graph_begin = 0, graph_end = 0;  // [graph_begin, graph_end): what enqueue_step runs
};

StepOperations step_operations(const Plan& plan, const StepCalls& calls);

// The names of the operations, one place for step_operations and for the code that runs them.
namespace op {
inline constexpr const char* cudnn_graph = "cudnn graph";  // an execution plan of the graph API
inline constexpr const char* convolution_forward = "cudnnConvolutionForward";
inline constexpr const char* convolution_backward_data = "cudnnConvolutionBackwardData";
inline constexpr const char* convolution_backward_filter = "cudnnConvolutionBackwardFilter";
inline constexpr const char* convolution_backward_bias = "cudnnConvolutionBackwardBias";
inline constexpr const char* add_tensor = "cudnnAddTensor";
inline constexpr const char* batchnorm_forward = "cudnnBatchNormalizationForwardTraining";
inline constexpr const char* batchnorm_forward_ex = "cudnnBatchNormalizationForwardTrainingEx";
inline constexpr const char* batchnorm_backward = "cudnnBatchNormalizationBackward";
inline constexpr const char* batchnorm_backward_ex = "cudnnBatchNormalizationBackwardEx";
// The backend's own kernels, by the function that launches them (kernels.hpp, channel_kernels.hpp).
inline constexpr const char* own_batchnorm_forward = "batchnorm_forward";
inline constexpr const char* own_batchnorm_backward = "batchnorm_backward";
inline constexpr const char* bias_forward = "bias_forward";
inline constexpr const char* bias_backward = "bias_backward";
inline constexpr const char* relu_forward = "relu_forward";
inline constexpr const char* relu_backward = "relu_backward";
inline constexpr const char* maxpool_forward = "maxpool_forward";
inline constexpr const char* maxpool_backward = "maxpool_backward";
inline constexpr const char* upsample_forward = "upsample_forward";
inline constexpr const char* upsample_backward = "upsample_backward";
inline constexpr const char* add_forward = "add_forward";
inline constexpr const char* add_backward = "add_backward";
inline constexpr const char* mse_loss_forward = "mse_loss_forward";
inline constexpr const char* mse_loss_backward = "mse_loss_backward";
inline constexpr const char* from_bf16 = "from_bf16";
inline constexpr const char* to_bf16 = "to_bf16";
inline constexpr const char* nchw_to_nhwc = "nchw_to_nhwc";
inline constexpr const char* rmsprop = "rmsprop";
inline constexpr const char* memcpy_host_to_device = "memcpy HtoD";
inline constexpr const char* memcpy_device_to_device = "memcpy DtoD";
inline constexpr const char* memcpy_device_to_host = "memcpy DtoH";
}  // namespace op

}  // namespace hb_cudnn
