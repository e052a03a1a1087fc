// What a session is created from, read safely: the session description checked, the graph's
// elements read by the sizes the graph carries, layer kinds named, device names parsed (its
// options: hb/options.hpp). Header-only, standard library only.
#pragma once

#include "hb/cpu.hpp"
#include "hb/error.hpp"
#include "hb/plugin.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace hb {

// The name of a layer kind ("conv2d", ...), or "unknown" for a kind this SDK does not know (a
// graph from a newer harness).
inline const char* layer_kind_name(hb_layer_kind kind) {
    switch (kind) {
        case HB_LAYER_CONV2D:
            return "conv2d";
        case HB_LAYER_BATCHNORM:
            return "batchnorm";
        case HB_LAYER_RELU:
            return "relu";
        case HB_LAYER_MAXPOOL2D:
            return "maxpool2d";
        case HB_LAYER_UPSAMPLE:
            return "upsample";
        case HB_LAYER_ADD:
            return "add";
        case HB_LAYER_MSE_LOSS:
            return "mse_loss";
    }
    return "unknown";
}
inline bool known_layer_kind(hb_layer_kind kind) {
    return std::string(layer_kind_name(kind)) != "unknown";
}

// The sizes of ABI 2.0's graph structs, the smallest a graph of this major version has: the end
// of each struct's last 2.0 field.
struct GraphSizes {
    static constexpr size_t graph = offsetof(hb_graph, target_shape) + sizeof(int64_t[4]);
    static constexpr size_t value = offsetof(hb_value, shape) + sizeof(int64_t[4]);
    static constexpr size_t tensor = offsetof(hb_tensor, trainable) + sizeof(int32_t);
    static constexpr size_t layer = offsetof(hb_layer, loss_weight) + sizeof(float);
};

// Throws hb::Error unless `graph` has at least ABI 2.0's sizes.
inline void check_graph_sizes(const hb_graph& graph) {
    if (graph.struct_size < GraphSizes::graph || graph.value_size < GraphSizes::value ||
        graph.tensor_size < GraphSizes::tensor || graph.layer_size < GraphSizes::layer)
        throw Error("graph: its sizes (graph " + std::to_string(graph.struct_size) + ", value " +
                    std::to_string(graph.value_size) + ", tensor " +
                    std::to_string(graph.tensor_size) + ", layer " +
                    std::to_string(graph.layer_size) + " bytes) are smaller than ABI " +
                    std::to_string(HB_API_VERSION_MAJOR) + ".0's: not a graph of this ABI");
}

namespace detail {

// Element i of an array whose elements are `size` bytes apart, as this header declares it: the
// fields the sender did not have are zero, which means "as before".
template <class T>
T element(const T* array, uint32_t size, int32_t i) {
    T copy;
    std::memset(&copy, 0, sizeof copy);
    std::memcpy(&copy, reinterpret_cast<const unsigned char*>(array) + size_t(i) * size,
                std::min<size_t>(size, sizeof copy));
    return copy;
}

}  // namespace detail

// The graph's i-th value, tensor and layer, read by the sizes the graph carries.
inline hb_value graph_value(const hb_graph& g, int32_t i) {
    return detail::element(g.values, g.value_size, i);
}
inline hb_tensor graph_tensor(const hb_graph& g, int32_t i) {
    return detail::element(g.tensors, g.tensor_size, i);
}
inline hb_layer graph_layer(const hb_graph& g, int32_t i) {
    return detail::element(g.layers, g.layer_size, i);
}

// What every plugin's create_session must check before it reads a session description: its size
// (a harness built against an older SDK), the graph and optimizer present, a known placement and
// an optimizer this SDK knows how to describe. Throws hb::Error naming what is wrong.
inline void check_session_desc(const hb_session_desc& desc) {
    // ABI 2.0's fields end with `options`; those added since are read through the helpers below.
    constexpr size_t abi_2_0 = offsetof(hb_session_desc, options) + sizeof(desc.options);
    if (desc.struct_size < abi_2_0)
        throw Error("session description is too small (" + std::to_string(desc.struct_size) +
                    " bytes, expected at least " + std::to_string(abi_2_0) + ")");
    if (!desc.graph || !desc.optimizer)
        throw Error("session description has no graph or optimizer");
    check_graph_sizes(*desc.graph);
    if (desc.placement != HB_PLACEMENT_DEVICE && desc.placement != HB_PLACEMENT_HOST)
        throw Error("unknown data placement " + std::to_string(static_cast<int>(desc.placement)),
                    HB_UNSUPPORTED);
    const hb_optimizer& o = *desc.optimizer;
    if (o.variant != HB_RMSPROP_TORCH && o.variant != HB_RMSPROP_TENSORFLOW)
        throw Error(
            "optimizer: unknown RMSProp variant " + std::to_string(static_cast<int>(o.variant)),
            HB_UNSUPPORTED);
    if (!(o.learning_rate >= 0) || !(o.alpha >= 0 && o.alpha <= 1) || !(o.eps >= 0) ||
        !(o.momentum >= 0) || !(o.weight_decay >= 0) || !(o.initial_square_average >= 0))
        throw Error(
            "optimizer: learning rate, eps, momentum, weight decay and initial square average "
            "must be non-negative and alpha in [0, 1]");
}

// Whether the session is asked for the gradient of its input batch (ABI 2.3's
// hb_session_desc::input_gradient); false in a description from an older harness.
inline bool wants_input_gradient(const hb_session_desc& desc) {
    constexpr size_t end = offsetof(hb_session_desc, input_gradient) + sizeof(desc.input_gradient);
    return desc.struct_size >= end && desc.input_gradient != 0;
}

// Whether the harness reads this session's gradients back (hb_session_desc.read_back): true for
// a description from a harness older than ABI 2.5, which did not say.
inline bool reads_back(const hb_session_desc& desc) {
    constexpr size_t end = offsetof(hb_session_desc, read_back) + sizeof(desc.read_back);
    return desc.struct_size < end || desc.read_back != 0;
}

// A session's device: "cpu", or a CUDA device, "cuda" (device 0) or "cuda:N".
struct DeviceName {
    bool cuda = false;
    int index = 0;
};

// Throws Error(HB_UNAVAILABLE) for anything else, saying what `backend` accepts.
inline DeviceName parse_device(const char* device, const std::string& backend) {
    const std::string name = device ? device : "";
    if (name == "cpu") return {};
    if (name == "cuda") return {true, 0};
    const std::string prefix = "cuda:";
    const std::string digits = name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : "";
    if (!digits.empty() && digits.size() <= 4 &&
        digits.find_first_not_of("0123456789") == std::string::npos)
        return {true, std::stoi(digits)};
    throw Error("device '" + name + "' is not available: " + backend +
                    " knows the devices \"cpu\", \"cuda\" and \"cuda:N\"",
                HB_UNAVAILABLE);
}

// For a backend that runs on the CPU only: its session's device must be "cpu".
inline void require_cpu(const hb_session_desc& desc, const std::string& backend) {
    if (parse_device(desc.device, backend).cuda)
        throw Error(std::string("device '") + desc.device + "' is not available: " + backend +
                        " runs on the CPU only (device \"cpu\")",
                    HB_UNAVAILABLE);
}

inline int64_t elements(const int64_t* shape, int rank = 4) {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= shape[i];
    return n;
}
inline int64_t elements(const hb_value& v) {
    return elements(v.shape);
}
inline int64_t elements(const hb_tensor& t) {
    return elements(t.shape, t.rank);
}

}  // namespace hb
