// The tensorflow backend's options (docs/backends.md), each one thing a TensorFlow user chooses.
#pragma once

#include "hb/options.hpp"
#include "hb/plugin.h"

#include <optional>
#include <string>
#include <vector>

namespace hb_tensorflow {

struct Settings {
    int threads{};           // intra-op
    int inter_op_threads{};  // TensorFlow's default is the core count; one keeps nodes in order
    bool fused_batchnorm{};  // FusedBatchNormV3, or tf.nn.moments + tf.nn.batch_normalization
    bool xla{};              // auto-clustering on the CPU
    std::optional<bool> onednn;   // required on or off; unset: as TensorFlow decided at load
    hb_placement placement = HB_PLACEMENT_DEVICE;
    // feed_dtype: float64 with host placement: the batches are kept as float64 and each step's is
    // converted to float32 as it is fed, as feed_dict did with NumPy's float64 arrays.
    bool feed_float64 = false;
    hb_optimizer optimizer{};
    bool input_gradient = false;
    bool read_back = false;  // the gradients are fetched each step, for read_gradients
};

// The options parse_settings reads, as the plugin declares them.
const std::vector<hb::OptionSpec>& option_specs();

// Throws hb::Error (HB_UNSUPPORTED) naming the option for an unknown key, a bad value or a choice
// this backend refuses (layout: nchw).
Settings parse_settings(const hb_session_desc& desc);

}  // namespace hb_tensorflow
