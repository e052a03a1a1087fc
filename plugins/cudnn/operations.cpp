#include "operations.hpp"

#include "hb/error.hpp"
#include "hb/profile.hpp"

#include <cstring>

namespace hb_cudnn {
namespace {

// The backward operations of one layer, as TrainingStep::backward_layer enqueues them; the
// phases are design.md §3's: a convolution's input gradient `backward_data`, its weight and
// bias gradients `backward_weights`; a batch norm's one call yields its input gradient and
// gamma's and beta's, `backward`; every other layer's backward is `backward_data`.
void add_backward(std::vector<Operation>& out, int32_t l, const LayerPlan& layer,
                  const LayerCalls& calls, bool widens) {
    const bool dx = !layer.input_gradient.empty() && layer.input_gradient[0];
    auto add = [&](hb_phase phase, const char* name) { out.push_back({l, phase, name}); };
    switch (layer.kind) {
        case HB_LAYER_CONV2D:
            if (dx)
                add(HB_PHASE_BACKWARD_DATA,
                    calls.graph_convolution ? op::cudnn_graph : op::convolution_backward_data);
            add(HB_PHASE_BACKWARD_WEIGHTS,
                calls.graph_convolution ? op::cudnn_graph : op::convolution_backward_filter);
            // bf16 to float32: a conversion within device memory, serving this layer.
            if (widens) add(HB_PHASE_REORDER, op::from_bf16);
            if (layer.bias >= 0)
                add(HB_PHASE_BACKWARD_WEIGHTS,
                    calls.bias == Calls::own ? op::bias_backward : op::convolution_backward_bias);
            break;
        case HB_LAYER_BATCHNORM:
            switch (calls.batchnorm) {
                case Calls::own:
                    add(HB_PHASE_BACKWARD, op::own_batchnorm_backward);
                    break;
                case Calls::cudnn_ex:
                    add(HB_PHASE_BACKWARD, op::batchnorm_backward_ex);
                    // The input gradient, written to scratch, added to the one already there.
                    if (dx && calls.gradient_scratch) add(HB_PHASE_BACKWARD_DATA, op::add_backward);
                    break;
                case Calls::cudnn:
                    add(HB_PHASE_BACKWARD, op::batchnorm_backward);
                    break;
            }
            break;
        case HB_LAYER_RELU:
            if (dx) add(HB_PHASE_BACKWARD_DATA, op::relu_backward);
            break;
        case HB_LAYER_MAXPOOL2D:
            if (dx) add(HB_PHASE_BACKWARD_DATA, op::maxpool_backward);
            break;
        case HB_LAYER_UPSAMPLE:
            if (dx) add(HB_PHASE_BACKWARD_DATA, op::upsample_backward);
            break;
        case HB_LAYER_ADD:
            add(HB_PHASE_BACKWARD_DATA, op::add_backward);
            break;
        case HB_LAYER_MSE_LOSS:
            if (dx) add(HB_PHASE_BACKWARD_DATA, op::mse_loss_backward);
            break;
    }
}

// The forward operations of one layer, as TrainingStep::forward_layer enqueues them.
void add_forward(std::vector<Operation>& out, int32_t l, const LayerPlan& layer,
                 const LayerCalls& calls) {
    auto add = [&](const char* name) { out.push_back({l, HB_PHASE_FORWARD, name}); };
    switch (layer.kind) {
        case HB_LAYER_CONV2D:
            add(calls.graph_convolution ? op::cudnn_graph : op::convolution_forward);
            if (layer.bias >= 0) add(calls.bias == Calls::own ? op::bias_forward : op::add_tensor);
            break;
        case HB_LAYER_BATCHNORM:
            add(calls.batchnorm == Calls::own        ? op::own_batchnorm_forward
                : calls.batchnorm == Calls::cudnn_ex ? op::batchnorm_forward_ex
                                                     : op::batchnorm_forward);
            break;
        case HB_LAYER_RELU:
            add(op::relu_forward);
            break;
        case HB_LAYER_MAXPOOL2D:
            add(op::maxpool_forward);
            break;
        case HB_LAYER_UPSAMPLE:
            add(op::upsample_forward);
            break;
        case HB_LAYER_ADD:
            add(op::add_forward);
            break;
        case HB_LAYER_MSE_LOSS:
            add(op::mse_loss_forward);
            break;
    }
}

}  // namespace

bool operator==(const Operation& a, const Operation& b) {
    return a.layer == b.layer && a.phase == b.phase && std::strcmp(a.name, b.name) == 0;
}

std::string to_string(const Operation& operation) {
    return (operation.layer < 0 ? std::string("no layer")
                                : "layer " + std::to_string(operation.layer)) +
           " " + hb::to_string(operation.phase) + " " + operation.name;
}

StepOperations step_operations(const Plan& plan, const StepCalls& calls) {
    const auto& layers = plan.layers();
    if (calls.layers.size() != layers.size())
        throw hb::Error("step_operations: " + std::to_string(calls.layers.size()) +
                        " layers' calls for a plan of " + std::to_string(layers.size()));
    StepOperations step;
    std::vector<Operation>& out = step.operations;
    // Session::step: the batch into the step's fixed buffers, before any captured graph.
    if (calls.placement == HB_PLACEMENT_HOST)
        for (int k = 0; k < 2; ++k)
            out.push_back({-1, HB_PHASE_TRANSFER, op::memcpy_host_to_device});
    else if (calls.cuda_graphs)
        for (int k = 0; k < 2; ++k)
            out.push_back({-1, HB_PHASE_REORDER, op::memcpy_device_to_device});
    step.graph_begin = out.size();
    // Session::enqueue_step: with host placement the batch into the step's layout and
    // storage (serving the whole step: no layer), then forward, backward, the update.
    if (calls.placement == HB_PLACEMENT_HOST) {
        if (calls.nhwc) out.push_back({-1, HB_PHASE_REORDER, op::nchw_to_nhwc});
        if (calls.bf16_input) out.push_back({-1, HB_PHASE_REORDER, op::to_bf16});
        if (calls.nhwc) out.push_back({-1, HB_PHASE_REORDER, op::nchw_to_nhwc});
    }
    for (size_t i = 0; i < layers.size(); ++i)
        if (!layers[i].absorbed) add_forward(out, int32_t(i), layers[i], calls.layers[i]);
    for (size_t i = layers.size(); i-- > 0;)
        if (layers[i].runs_backward)
            add_backward(out, int32_t(i), layers[i], calls.layers[i],
                         calls.widens_weight_gradients);
    // One RMSProp kernel updates every parameter: no layer.
    out.push_back({-1, HB_PHASE_UPDATE, op::rmsprop});
    step.graph_end = out.size();
    if (plan.loss_count() > 0) out.push_back({-1, HB_PHASE_TRANSFER, op::memcpy_device_to_host});
    return step;
}

}  // namespace hb_cudnn
