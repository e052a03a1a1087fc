// The TensorFlow backend's entry point: the seed's own framework, through TensorFlow's C API
// (docs/backends.md "tensorflow").
#include "hb/describe.hpp"
#include "hb/plugin.hpp"
#include "kernels.hpp"
#include "session.hpp"

#include <tensorflow/c/c_api.h>

#include <memory>

namespace {

class TensorflowPlugin : public hb::Plugin {
public:
    hb::PluginInfo describe() override {
        hb::PluginInfo info = hb::plugin_info(
            HB_PLUGIN_NAME,
            "TensorFlow through its C API: one graph, TensorFlow's autodiff (TF_AddGradients) "
            "and RMSProp, one TF_SessionRun per step, on the CPU",
            HB_CAP_GRADIENTS | HB_CAP_HOST_PLACEMENT | HB_CAP_PROFILE | HB_CAP_INPUT_GRADIENT,
            hb_tensorflow::option_specs());
        const std::string onednn = hb_tensorflow::onednn_environment();
        info.libraries = {{"tensorflow", TF_Version()},
                          {"TF_ENABLE_ONEDNN_OPTS", onednn.empty() ? "unset" : onednn}};
        info.devices = {hb::cpu_device()};
        return info;
    }

    std::unique_ptr<hb::Session> create_session(const hb_session_desc& desc) override {
        return std::make_unique<hb_tensorflow::Session>(desc);
    }
};

}  // namespace

HB_PLUGIN(TensorflowPlugin)
