// The oneDNN backend's options, as the plugin declares them, and the settings read from them.
#pragma once

#include "hb/options.hpp"
#include "hb/plugin.h"

#include <vector>

namespace hb_onednn {

const std::vector<hb::OptionSpec>& option_specs();

struct Settings {
    // Each set by parse_settings from the options, whose declarations hold the defaults.
    int threads{};
    hb_placement placement = HB_PLACEMENT_DEVICE;
    bool fuse_batchnorm_relu{};
    bool native_pooling{};  // 2x2 max pooling and upsampling backward with kernels.hpp
    bool plain_layout{};    // activations in NCHW, reordered around each convolution
    bool input_gradient{};  // backward also computes the gradient of the graph's input
    hb_optimizer optimizer{};
};

    // Accepts only the device "cpu" (HB_UNAVAILABLE otherwise) and the options option_specs()
    // declares.
    Settings parse_settings(const hb_session_desc& desc);

}  // namespace hb_onednn
