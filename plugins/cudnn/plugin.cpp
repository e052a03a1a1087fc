// The cuDNN backend: the whole training step on a CUDA device with cuDNN and the backend's own
// kernels.
#include "hb/plugin.hpp"
#include "devices.hpp"
#include "session.hpp"

namespace {

class CudnnPlugin : public hb::Plugin {
public:
    hb::PluginInfo describe() override {
        hb::PluginInfo info;
        info.name = "cudnn";
        info.version = "1.0.0";
        info.description = "raw CUDA + cuDNN: measured convolution algorithms, one device arena";
        info.capabilities = HB_CAP_GRADIENTS | HB_CAP_PHASE_TIMES | HB_CAP_PEAK_MEMORY |
                            HB_CAP_HOST_PLACEMENT | HB_CAP_PROFILE | HB_CAP_DATA_PARALLEL |
                            HB_CAP_INPUT_GRADIENT;
        info.libraries = cudnn_backend::library_versions();
        info.devices = cudnn_backend::cuda_devices();
        info.options = cudnn_backend::option_specs();
        return info;
    }
    std::unique_ptr<hb::Session> create_session(const hb_session_desc& desc) override {
        return std::make_unique<cudnn_backend::CudnnSession>(desc);
    }
};

}  // namespace

HB_PLUGIN(CudnnPlugin)
