// What the session actually runs, as the manifest JSON (docs/design.md §3).
#include "hb/manifest.hpp"
#include "hb/json.hpp"
#include "layout.hpp"
#include "training_step.hpp"

#include <map>

namespace hb_onednn {
namespace {

using hb::json_string;
using hb::JsonObject;

std::string isa_name(dnnl::cpu_isa isa) {
    switch (isa) {
        case dnnl::cpu_isa::sse41:
            return "sse41";
        case dnnl::cpu_isa::avx:
            return "avx";
        case dnnl::cpu_isa::avx2:
            return "avx2";
        case dnnl::cpu_isa::avx2_vnni:
            return "avx2_vnni";
#if DNNL_VERSION_MAJOR < 3
        case dnnl::cpu_isa::avx512_mic:
            return "avx512_mic";
        case dnnl::cpu_isa::avx512_mic_4ops:
            return "avx512_mic_4ops";
#endif
        case dnnl::cpu_isa::avx512_core:
            return "avx512_core";
        case dnnl::cpu_isa::avx512_core_vnni:
            return "avx512_core_vnni";
        case dnnl::cpu_isa::avx512_core_bf16:
            return "avx512_core_bf16";
        case dnnl::cpu_isa::avx512_core_amx:
            return "avx512_core_amx";
        default:
            return "all";
    }
}

template <class Map>
std::string counts(const Map& m) {
    JsonObject o;
    for (const auto& [key, count] : m) o.add(key, count);
    return o.str();
}

}  // namespace

std::string effective_isa() {
    return isa_name(dnnl::get_effective_cpu_isa());
}

std::string TrainingStep::manifest_json() const {
    JsonObject impls;
    for (const auto& [kind, list] : impls_) impls.add(kind, counts(list));

    std::map<std::string, int> activations, weights;
    for (int v = 0; v < graph_.num_values(); ++v)
        if (!plan_.values[v].is_zero() && !topology_.is_loss[v])
            ++activations[layout_name(plan_.values[v], "nchw")];
    for (const TensorPlan& t : plan_.tensors)
        if (!t.working.is_zero()) ++weights[layout_name(t.working, "oihw")];

    int fused = 0;
    std::string unfused = "[";
    for (int l = 0; l < graph_.num_layers(); ++l) {
        if (graph_.layers[l].kind != HB_LAYER_BATCHNORM) continue;
        if (topology_.fused_relu[l] >= 0) {
            ++fused;
        } else {
            unfused += (unfused.size() > 1 ? ", " : "") + json_string(graph_.layers[l].name);
        }
    }
    unfused += "]";

    std::map<std::string, int> deliveries;
    for (const auto& list : gradients_.contributions)
        for (const Contribution& c : list) {
            static const char* names[] = {"write", "write_then_add", "accumulate",
                                          "share", "copy",           "add_from"};
            ++deliveries[names[static_cast<int>(c.delivery)]];
        }

    int conv_adds = 0, adds_removed = 0;
    for (const LayerPlan& p : plan_.layers) {
        conv_adds += p.writes_into >= 0;
        adds_removed += p.computed_by_convolutions;
    }
    JsonObject fusions;
    fusions.add("batchnorm_relu", fused)
        .add("unfused_batchnorm", unfused)
        .add("convolution_into_add", conv_adds)
        .add("adds_computed_by_convolutions", adds_removed);
    JsonObject reorders;
    reorders.add("forward", forward_reorders_)
        .add("backward", backward_reorders_)
        .add("update", update_reorders_);
    JsonObject memory;
    memory.add("arena_bytes", arena_layout_.bytes)
        .add("arena_bytes_without_reuse", arena_layout_.unshared_bytes)
        .add("scratchpad_bytes", scratchpad_bytes_)
        .add("workspace_bytes", workspace_bytes_)
        .add("parameter_bytes", parameters_.size())
        .add("allocated_bytes", allocated_bytes());

    JsonObject root = hb::manifest(hb::Math::fp32, settings_.threads);
    root.add_string("cpu_runtime", "OpenMP")
        .add_string("isa", effective_isa())
        .add_string("placement", hb::placement_word(settings_.placement))
        .add_string("layout", settings_.plain_layout ? "plain" : "blocked")
        .add_bool("input_gradient", settings_.input_gradient)
        .add("implementations", impls.str())
        .add("activation_layouts", counts(activations))
        .add("weight_layouts", counts(weights))
        .add("fusions", fusions.str())
        .add("gradient_deliveries", counts(deliveries))
        .add("reorders_per_step", reorders.str())
        .add("memory", memory.str());
    return root.str();
}

}  // namespace hb_onednn
