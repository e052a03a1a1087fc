// The loops backend: every layer in plain loops on one thread, float32, with hb::HostSession
// doing the rest of the session. The smallest complete backend, and the example
// docs/writing-a-plugin.md starts from.
#include "hb/plugin.hpp"
#include "hb/describe.hpp"
#include "session.hpp"

#include <memory>

namespace {

class LoopsPlugin : public hb::Plugin {
public:
    hb::PluginInfo describe() override {
        hb::PluginInfo info = hb::plugin_info(
            HB_PLUGIN_NAME, "Plain loops on one CPU thread, float32: the smallest complete backend",
            hb::kAllCapabilities, {});
        info.takes_no_options = true;
        info.devices = {hb::cpu_device()};
        return info;
    }

    std::unique_ptr<hb::Session> create_session(const hb_session_desc& desc) override {
        return std::make_unique<hb_loops::Session>(desc);
    }
};

}  // namespace

HB_PLUGIN(LoopsPlugin)
