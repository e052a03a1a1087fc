// The step's members of the session's manifest: what setup chose (fusions, batch-norm calls,
// convolution algorithms) and the memory it planned.
#include "training_step.hpp"

namespace hb_cudnn {
namespace {

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

}  // namespace

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

}  // namespace hb_cudnn
