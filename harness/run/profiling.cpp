#include "run/profiling.hpp"

#include "hb/profile.hpp"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

namespace harness::run {

std::string operation_kind(const model::Layer* layer, hb_phase phase) {
    switch (phase) {
        case HB_PHASE_UPDATE:
            return "optimizer";
        case HB_PHASE_REORDER:
            return "reorders and copies";
        case HB_PHASE_TRANSFER:
            return "transfers";
        case HB_PHASE_LOSS:
            return "loss";
        default:
            break;
    }
    if (!layer) return "other";
    switch (layer->kind) {
        case model::LayerKind::conv2d:
            switch (phase) {
                case HB_PHASE_FORWARD:
                    return "convolution forward";
                case HB_PHASE_BACKWARD_DATA:
                    return "convolution backward-data";
                case HB_PHASE_BACKWARD_WEIGHTS:
                    return "convolution backward-weights";
                case HB_PHASE_BACKWARD:
                    return "convolution backward (data and weights)";
                default:
                    return "other";
            }
        case model::LayerKind::batchnorm:
            return "batch norm";
        case model::LayerKind::relu:
            return "ReLU";
        case model::LayerKind::maxpool2d:
            return "pooling";
        case model::LayerKind::upsample:
            return "upsampling";
        case model::LayerKind::add:
            return "sums";
        case model::LayerKind::mse_loss:
            return "loss";
    }
    return "other";
}

std::vector<std::string> operation_kinds_of(const std::string& layer_kind) {
    if (layer_kind == "rmsprop") return {operation_kind(nullptr, HB_PHASE_UPDATE)};
    std::vector<std::string> kinds;
    for (model::LayerKind k : model::kLayerKinds) {
        if (layer_kind != model::to_string(k)) continue;
        model::Layer layer;
        layer.kind = k;
        for (hb_phase phase : {HB_PHASE_FORWARD, HB_PHASE_BACKWARD_DATA, HB_PHASE_BACKWARD_WEIGHTS,
                               HB_PHASE_BACKWARD}) {
            const std::string kind = operation_kind(&layer, phase);
            if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
        }
    }
    return kinds;
}

output::Operation operation_of(const hb_event& event, const model::Graph& graph) {
    const model::Layer* layer = nullptr;
    if (event.layer >= 0) {
        if (event.layer >= static_cast<int32_t>(graph.layers.size()))
            throw std::runtime_error("read_events: an event names layer " +
                                     std::to_string(event.layer) + " of a graph with " +
                                     std::to_string(graph.layers.size()));
        layer = &graph.layers[static_cast<size_t>(event.layer)];
    }
    output::Operation op;
    op.name = event.name ? event.name : "";
    op.layer = layer ? layer->name : "";
    op.kind = operation_kind(layer, event.phase);
    op.phase = hb::to_string(event.phase);
    op.track = event.track && *event.track ? event.track : "main";
    op.start_ms = event.start_ms;
    op.end_ms = event.end_ms;
    return op;
}

std::string trace_path(const std::string& dir, const std::string& config,
                       const std::string& backend) {
    std::string name = config + "." + backend;
    for (char& c : name) {
        const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                           (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
        if (!plain) c = '_';
    }
    return (std::filesystem::path(dir) / (name + ".json")).string();
}

}  // namespace harness::run
