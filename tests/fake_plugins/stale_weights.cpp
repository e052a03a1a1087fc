// A test fixture for conformance: the loops backend with a stale working copy of its convolutions'
// weights. Each convolution reads a copy of its weights taken at the session's first step and
// never refreshed, so step 1 is right and every later step is computed from the weights before the
// update; the update itself, applied to the real weights with the gradients it reports, is right.
#include "hb/describe.hpp"
#include "hb/plugin.hpp"
#include "session.hpp"

#include <map>
#include <memory>
#include <vector>

namespace {

class StaleSession : public hb_loops::Session {
public:
    using hb_loops::Session::Session;

    void load_state(const float* const* tensors) override {
        copies_.clear();
        hb_loops::Session::load_state(tensors);
    }

protected:
    void conv2d(const hb::LayerPass& p) override { hb_loops::Session::conv2d(stale(p)); }
    void conv2d_backward(const hb::LayerPass& p) override {
        hb_loops::Session::conv2d_backward(stale(p));
    }

private:
    hb::LayerPass stale(const hb::LayerPass& p) {
        auto [copy, first] = copies_.try_emplace(&p.layer);
        if (first) {
            const int64_t k = p.layer.kernel;
            copy->second.assign(p.weight, p.weight + p.y_dims.c * p.x_dims[0].c * k * k);
        }
        hb::LayerPass with_copy = p;
        with_copy.weight = copy->second.data();
        return with_copy;
    }

    std::map<const hb::Layer*, std::vector<float>> copies_;
};

class StaleWeightsPlugin : public hb::Plugin {
public:
    hb::PluginInfo describe() override {
        hb::PluginInfo info = hb::plugin_info(
            HB_PLUGIN_NAME, "The loops backend, its convolutions on weights never refreshed",
            hb::kAllCapabilities, {});
        info.takes_no_options = true;
        info.devices = {hb::cpu_device()};
        return info;
    }

    std::unique_ptr<hb::Session> create_session(const hb_session_desc& desc) override {
        return std::make_unique<StaleSession>(desc);
    }
};

}  // namespace

HB_PLUGIN(StaleWeightsPlugin)
