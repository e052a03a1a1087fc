// The oneDNN backend's entry point: the training step with oneDNN primitives on the CPU.
#include "hb/describe.hpp"
#include "hb/plugin.hpp"
#include "session.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <memory>
#include <string>

namespace hb_onednn {
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
        hb::PluginInfo info = hb::plugin_info(
            HB_PLUGIN_NAME,
            "oneDNN primitives on the CPU in float32: blocked layouts, fused batch norm + ReLU, "
            "OpenMP threads",
            hb::kAllCapabilities, hb_onednn::option_specs());
        info.libraries = {{"oneDNN", library_version()}};
        info.devices = {hb::cpu_device("oneDNN ISA " + hb_onednn::effective_isa())};
        return info;
    }

    std::unique_ptr<hb::Session> create_session(const hb_session_desc& desc) override {
        return std::make_unique<hb_onednn::Session>(desc);
    }
};

}  // namespace

HB_PLUGIN(OnednnPlugin)
