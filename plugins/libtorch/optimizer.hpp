// RMSProp (DESIGN §4), Torch and TensorFlow variants, as fused in-place tensor operations on the
// parameters' device. The state tensors keep their storage for the life of the session, so the
// update can be captured in a CUDA graph.
#pragma once

#include "hb/plugin.h"

#include <ATen/Tensor.h>

#include <vector>

namespace libtorch_backend {

class RmsProp {
public:
    // `parameters` are leaves whose .grad() the update reads; v starts at
    // settings.initial_square_average, in each parameter's memory format.
    RmsProp(const hb_optimizer& settings, std::vector<at::Tensor> parameters);

    // One update from the gradients of the last backward pass.
    void step();
    // The squared-gradient averages, one canonical (dense, row-major) host buffer per parameter.
    void load_square_averages(const float* const* buffers);

    const hb_optimizer& settings() const { return settings_; }

private:
    hb_optimizer settings_;
    std::vector<at::Tensor> parameters_, square_averages_, momentum_buffers_;
};

}  // namespace libtorch_backend
