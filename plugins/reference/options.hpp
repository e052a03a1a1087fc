// The reference backend's options, as the plugin declares them, and the settings read from them.
#pragma once

#include "gemm.hpp"
#include "hb/options.hpp"
#include "hb/plugin.h"
#include "random_rounding.hpp"

#include <vector>

namespace hb_reference {

// The options it takes, as the plugin declares them, each with its default: `threads`,
// `gemm_kernel`, `math` (fp32 or fp64) and `rounding_seed` with `rounding_bits` (a member of the
// check's rounding-noise ensemble: random_rounding.hpp; float32 only).
const std::vector<hb::OptionSpec>& option_specs();

struct Settings {
    int threads = 1;
    TileKernel kernel = TileKernel::portable;
    bool fp64 = false;
    RandomRounding rounding;
    hb_placement placement = HB_PLACEMENT_DEVICE;
    hb_optimizer optimizer{};
};
// Accepts only the device "cpu" (HB_UNAVAILABLE otherwise) and those options.
Settings parse_settings(const hb_session_desc& desc);

}  // namespace hb_reference
