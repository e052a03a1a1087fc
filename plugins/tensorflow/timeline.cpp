#include "timeline.hpp"

namespace hb_tensorflow {
namespace {

bool starts_with(const std::string& s, const char* prefix) {
    return s.rfind(prefix, 0) == 0;
}

// oneDNN's kernels are TensorFlow's op types under a prefix: _MklNativeConv2DBackpropFilter,
// _MklConv2DBackpropFilterWithBias (its bias gradient fused in), ...
std::string without_onednn_prefix(const std::string& type) {
    for (const char* prefix : {"_MklNative", "_Mkl"})
        if (starts_with(type, prefix)) return type.substr(std::char_traits<char>::length(prefix));
    return type;
}

hb_phase backward_phase(const std::string& op_type) {
    const std::string type = without_onednn_prefix(op_type);
    if (starts_with(type, "Conv2DBackpropInput")) return HB_PHASE_BACKWARD_DATA;
    if (starts_with(type, "Conv2DBackpropFilter") || type == "BiasAddGrad")
        return HB_PHASE_BACKWARD_WEIGHTS;
    if (starts_with(type, "FusedBatchNormGrad")) return HB_PHASE_BACKWARD;
    return HB_PHASE_BACKWARD_DATA;
}

}  // namespace

std::string part_of(const std::string& node_name) {
    if (starts_with(node_name, "gradients/")) return "backward";
    if (starts_with(node_name, "update/")) return "update";
    if (starts_with(node_name, "data/")) return "data";
    if (starts_with(node_name, "init/")) return "setup";
    return "forward";
}

NodeEvent classify(const std::string& node_name, const std::string& op_type, int layer) {
    NodeEvent e;
    e.name = op_type.empty() ? node_name : op_type;
    e.layer = layer;
    if (node_name == "_SOURCE") {
        e.skip = true;
        return e;
    }
    const std::string part = part_of(node_name);
    if (part == "backward")
        e.phase = layer >= 0 ? backward_phase(op_type) : HB_PHASE_LOSS;
    else if (part == "update")
        e.phase = HB_PHASE_UPDATE;
    else if (part == "data")
        e.phase = HB_PHASE_REORDER;  // the step's batch picked from the session's batches
    else if (starts_with(node_name, "loss/"))
        e.phase = HB_PHASE_LOSS;
    else
        e.phase = layer >= 0 ? HB_PHASE_FORWARD : HB_PHASE_OTHER;
    return e;
}

}  // namespace hb_tensorflow
