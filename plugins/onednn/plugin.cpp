// The oneDNN backend's entry point: the training step with oneDNN primitives on the CPU.
#include "hb/plugin.hpp"
#include "hb/cpu.hpp"
#include "session.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <memory>
#include <string>

namespace onednn_backend {
std::string effective_isa();
}

namespace {

std::string library_version() {
    const dnnl_version_t* v = dnnl_version();
    std::string version =
        std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
    const std::string hash = v->hash ? v->hash : "";
    return hash.empty() || hash == "N/A" ? version + " (commit unknown)"
                                         : version + " (" + hash + ")";
}

class OnednnPlugin : public hb::Plugin {
public:
    hb::PluginInfo describe() override {
        hb::PluginInfo info;
        info.name = HB_PLUGIN_NAME;
        info.version = "1.0.0";
        info.description =
            "oneDNN primitives on the CPU in float32: blocked layouts, fused batch norm + ReLU, "
            "OpenMP threads";
        info.capabilities = HB_CAP_GRADIENTS | HB_CAP_PHASE_TIMES | HB_CAP_PEAK_MEMORY |
                            HB_CAP_HOST_PLACEMENT | HB_CAP_PROFILE | HB_CAP_DATA_PARALLEL |
                            HB_CAP_INPUT_GRADIENT;
        info.libraries = {{"oneDNN", library_version()}};
        hb::DeviceInfo cpu;
        cpu.name = "cpu";
        cpu.description = hb::cpu_description("oneDNN ISA " + onednn_backend::effective_isa());
        info.devices = {cpu};
        info.options = onednn_backend::OnednnSession::option_specs();
        return info;
    }

    std::unique_ptr<hb::Session> create_session(const hb_session_desc& desc) override {
        return std::make_unique<onednn_backend::OnednnSession>(desc);
    }
};

}  // namespace

HB_PLUGIN(OnednnPlugin)
