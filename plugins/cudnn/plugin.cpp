// The cuDNN backend: the whole training step on a CUDA device with cuDNN and the backend's own
// kernels.
#include "hb/describe.hpp"
#include "hb/plugin.hpp"
#include "devices.hpp"
#include "session.hpp"

namespace {

class CudnnPlugin : public hb::Plugin {
public:
    hb::PluginInfo describe() override {
        hb::PluginInfo info = hb::plugin_info(
            HB_PLUGIN_NAME, "raw CUDA + cuDNN: measured convolution algorithms, one device arena",
            hb::kAllCapabilities, hb_cudnn::option_specs());
        info.libraries = hb_cudnn::library_versions();
        info.devices = hb_cudnn::cuda_devices();
        return info;
    }
    std::unique_ptr<hb::Session> create_session(const hb_session_desc& desc) override {
        return std::make_unique<hb_cudnn::Session>(desc);
    }
};

}  // namespace

HB_PLUGIN(CudnnPlugin)
