// A session's settings: the device, the placement, the optimizer and the backend options of the
// run config, checked before anything is allocated.
#pragma once

#include "hb/manifest.hpp"
#include "hb/options.hpp"
#include "hb/plugin.h"

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <string>
#include <vector>

namespace hb_libtorch {

struct Settings {
    c10::Device device{c10::kCPU};
    hb_placement placement = HB_PLACEMENT_DEVICE;
    hb_optimizer optimizer{};
    int threads = 1;              // intra-op threads of LibTorch's CPU kernels
    bool channels_last = false;   // layout nhwc: activations and conv weights
    bool cudnn_benchmark{};       // CUDA: time cuDNN's algorithms on first use
    bool tf32 = false;            // CUDA: TF32 tensor cores in convolutions and matrix products
    bool cuda_graphs = false;     // CUDA: capture the whole step once, then replay it
    // RMSProp's multi-tensor (_foreach_) kernels; torch.optim's default: on for CUDA, off for CPU.
    bool foreach = false;
    // float32 is what the harness times; float64 verifies the graph's semantics without float32
    // rounding (exchange buffers stay float32).
    c10::ScalarType dtype = c10::ScalarType::Float;
    // Each step also computes the gradient of its input batch (hb::wants_input_gradient).
    bool input_gradient = false;
};

// The options parse_settings reads, as the plugin declares them.
const std::vector<hb::OptionSpec>& option_specs();

// Accepts the devices "cpu", "cuda" and "cuda:N" and the options threads, layout,
// cudnn_benchmark, cuda_graphs, foreach and math (fp32, tf32 or fp64). Throws hb::Error:
// HB_UNAVAILABLE for a CUDA device this build or machine cannot offer, HB_UNSUPPORTED for an
// unknown option or a CUDA-only option switched on for the CPU.
Settings parse_settings(const hb_session_desc& desc);

// "fp32", "tf32" or "fp64", the math mode the harness's conformance tolerance depends on.
hb::Math math_mode(const Settings& settings);

}  // namespace hb_libtorch
