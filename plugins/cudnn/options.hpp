// The session settings of the cuDNN backend: backend options from the run config, the device and
// the placement, checked before anything touches the GPU.
#pragma once

#include "hb/manifest.hpp"
#include "hb/options.hpp"
#include "hb/plugin.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hb_cudnn {

enum class Math { fp32, tf32, bf16 };
enum class Layout { nchw, nhwc };
// How convolutions reach cuDNN: its graph API (every engine, chosen by heuristics and timing) or
// the legacy cudnnFind*/cudnnConvolution* calls (its older kernels only).
enum class ConvolutionApi { graph, legacy };
// Batch norm in fp32 and tf32: cuDNN's cudnnBatchNormalization*Ex calls with workspace and reserve
// space (its fast NHWC path, and PyTorch's), or the plain ones.
enum class BatchNormApi { ex, legacy };
// The element type of activations and their gradients (MathMode::storage, math_mode.hpp).
enum class Storage { f32, bf16 };

int64_t element_bytes(Storage storage);

const char* to_string(Math math);
hb::Math sdk_math(Math math);  // the manifest's word for it (hb/manifest.hpp)
const char* to_string(Layout layout);

struct Settings {
    Math math = Math::fp32;
    Layout layout = Layout::nchw;
    ConvolutionApi convolutions = ConvolutionApi::graph;
    BatchNormApi batchnorm = BatchNormApi::ex;
    bool fuse_batchnorm_relu = false;
    bool cuda_graphs = false;
    // Every step also computes the gradient of its input batch (ABI 2.3).
    bool input_gradient = false;
    int device = 0;  // the N of "cuda:N"
    hb_placement placement = HB_PLACEMENT_DEVICE;
    hb_optimizer optimizer{};
};

// "cuda:N" (or "cuda", meaning cuda:0) -> N; anything else is HB_UNAVAILABLE.
int parse_device(const std::string& device);

// The options parse_settings reads, as the plugin declares them.
const std::vector<hb::OptionSpec>& option_specs();

// Reads the desc (with ABI 2.3's input_gradient) and its options (math, layout, convolutions,
// batchnorm, fuse_batchnorm_relu, cuda_graphs); unknown keys and unsupported values throw hb::Error
// with HB_UNSUPPORTED.
Settings parse_settings(const hb_session_desc& desc);

}  // namespace hb_cudnn
