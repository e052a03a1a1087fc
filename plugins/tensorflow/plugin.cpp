// The TensorFlow backend's entry point: the seed's own framework, through TensorFlow's C API
// (docs/backends.md "tensorflow").
#include "hb/cpu.hpp"
#include "hb/plugin.hpp"
#include "kernels.hpp"
#include "session.hpp"

#include <tensorflow/c/c_api.h>

#include <memory>

namespace {

class TensorflowPlugin : public hb::Plugin {
public:
    hb::PluginInfo describe() override {
        hb::PluginInfo info;
        info.name = HB_PLUGIN_NAME;
        info.version = "1.0.0";
        info.description =
            "TensorFlow through its C API: one graph, TensorFlow's autodiff (TF_AddGradients) "
            "and RMSProp, one TF_SessionRun per step, on the CPU";
        info.capabilities = HB_CAP_GRADIENTS | HB_CAP_HOST_PLACEMENT | HB_CAP_PROFILE |
                            HB_CAP_INPUT_GRADIENT;
        const std::string onednn = tensorflow_plugin::onednn_environment();
        info.libraries = {{"tensorflow", TF_Version()},
                          {"TF_ENABLE_ONEDNN_OPTS", onednn.empty() ? "unset" : onednn}};
        hb::DeviceInfo cpu;
        cpu.name = "cpu";
        cpu.description = hb::cpu_description();
        info.devices = {cpu};
        info.options = tensorflow_plugin::option_specs();
        return info;
    }

    std::unique_ptr<hb::Session> create_session(const hb_session_desc& desc) override {
        return std::make_unique<tensorflow_plugin::TensorflowSession>(desc);
    }
};

}  // namespace

HB_PLUGIN(TensorflowPlugin)
