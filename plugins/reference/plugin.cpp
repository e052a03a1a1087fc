// The reference backend's entry point: plain C++ on the CPU, the oracle the other backends are
// checked against (docs/design.md §7) and the example to start from when writing a plugin.
#include "hb/describe.hpp"
#include "hb/plugin.hpp"
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
        hb::PluginInfo info = hb::plugin_info(
            HB_PLUGIN_NAME,
            "Plain C++ CPU backend (im2col + blocked GEMM, std::thread), float32 or float64; in "
            "float64 the conformance oracle",
            hb::kAllCapabilities, hb_reference::option_specs());
        info.libraries = {{"compiler", compiler_version()}};
        info.devices = {hb::cpu_device()};
        return info;
    }

    std::unique_ptr<hb::Session> create_session(const hb_session_desc& desc) override {
        return hb_reference::make_session(desc);
    }
};

}  // namespace

HB_PLUGIN(ReferencePlugin)
