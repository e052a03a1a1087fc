// The LibTorch backend's entry point: the harness's graph as ATen operations, autograd for the
// backward pass, on the CPU or on CUDA devices when LibTorch has them.
#include "hb/describe.hpp"
#include "hb/plugin.hpp"
#include "devices.hpp"
#include "session.hpp"

#include <memory>
#include <string>

namespace {

class TorchPlugin : public hb::Plugin {
public:
    hb::PluginInfo describe() override {
        using namespace hb_libtorch;
        hb::PluginInfo info = hb::plugin_info(
            HB_PLUGIN_NAME,
            "LibTorch (ATen operations, autograd, RMSProp as tensor operations) on the CPU and "
            "CUDA devices",
            hb::kAllCapabilities, option_specs());
        info.libraries = {{"LibTorch", libtorch_version()}};
        if (!cuda_version().empty()) info.libraries.emplace_back("CUDA", cuda_version());
        if (!cudnn_version().empty()) info.libraries.emplace_back("cuDNN", cudnn_version());
        info.devices.push_back(hb::cpu_device());
        const std::string reason = cuda_unavailable_reason();
        if (!reason.empty()) {
            hb::DeviceInfo cuda;
            cuda.name = "cuda:0";
            cuda.description = "CUDA device";
            cuda.available = false;
            cuda.unavailable_reason = reason;
            info.devices.push_back(cuda);
        }
        for (int i = 0; reason.empty() && i < cuda_device_count(); ++i) {
            hb::DeviceInfo cuda;
            cuda.name = "cuda:" + std::to_string(i);
            cuda.description = cuda_device_description(i);
            info.devices.push_back(cuda);
        }
        return info;
    }

    std::unique_ptr<hb::Session> create_session(const hb_session_desc& desc) override {
        return std::make_unique<hb_libtorch::Session>(desc);
    }
};

}  // namespace

HB_PLUGIN(TorchPlugin)
