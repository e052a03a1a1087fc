// The reference backend's entry point: plain C++ on the CPU, the oracle the other backends are
// checked against (docs/design.md §7) and the example to start from when writing a plugin.
#include "hb/plugin.hpp"
#include "hb/cpu.hpp"
#include "session.hpp"

#include <memory>
#include <string>

namespace {

std::string compiler_version() {
#if defined(__clang__)
    return std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
    return std::string("gcc ") + __VERSION__;
#else
    return "unknown";
#endif
}

class ReferencePlugin : public hb::Plugin {
public:
    hb::PluginInfo describe() override {
        hb::PluginInfo info;
        info.name = HB_PLUGIN_NAME;
        info.version = "1.0.0";
        info.description =
            "Plain C++ CPU backend (im2col + blocked GEMM, std::thread), float32 or float64; in "
            "float64 the conformance oracle";
        info.capabilities = HB_CAP_GRADIENTS | HB_CAP_PHASE_TIMES | HB_CAP_PEAK_MEMORY |
                            HB_CAP_HOST_PLACEMENT | HB_CAP_PROFILE | HB_CAP_DATA_PARALLEL |
                            HB_CAP_INPUT_GRADIENT;
        info.libraries = {{"compiler", compiler_version()}};
        hb::DeviceInfo cpu;
        cpu.name = "cpu";
        cpu.description = hb::cpu_description();
        info.devices = {cpu};
        info.options = reference::option_specs();
        return info;
    }

    std::unique_ptr<hb::Session> create_session(const hb_session_desc& desc) override {
        return reference::make_session(desc);
    }
};

}  // namespace

HB_PLUGIN(ReferencePlugin)
