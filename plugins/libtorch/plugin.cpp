// The LibTorch backend's entry point: the harness's graph as ATen operations, autograd for the
// backward pass, on the CPU or on CUDA devices when LibTorch has them.
#include "hb/plugin.hpp"
#include "devices.hpp"
#include "hb/cpu.hpp"
#include "session.hpp"

#include <memory>
#include <string>

namespace {

class TorchPlugin : public hb::Plugin {
public:
    hb::PluginInfo describe() override {
        using namespace libtorch_backend;
        hb::PluginInfo info;
        info.name = HB_PLUGIN_NAME;
        info.version = "1.0.0";
        info.description =
            "LibTorch (ATen operations, autograd, RMSProp as tensor operations) on the CPU and "
            "CUDA devices";
        info.capabilities = HB_CAP_GRADIENTS | HB_CAP_PHASE_TIMES | HB_CAP_PEAK_MEMORY |
                            HB_CAP_HOST_PLACEMENT | HB_CAP_PROFILE | HB_CAP_DATA_PARALLEL |
                            HB_CAP_INPUT_GRADIENT;
        info.libraries = {{"LibTorch", libtorch_version()}};
        if (!cuda_version().empty()) info.libraries.emplace_back("CUDA", cuda_version());
        if (!cudnn_version().empty()) info.libraries.emplace_back("cuDNN", cudnn_version());

        hb::DeviceInfo cpu;
        cpu.name = "cpu";
        cpu.description = hb::cpu_description();
        info.devices.push_back(cpu);
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
        info.options = option_specs();
        return info;
    }

    std::unique_ptr<hb::Session> create_session(const hb_session_desc& desc) override {
        return std::make_unique<libtorch_backend::TorchSession>(desc);
    }
};

}  // namespace

HB_PLUGIN(TorchPlugin)
