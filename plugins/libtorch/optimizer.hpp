// RMSProp (docs/design.md §4), Torch and TensorFlow variants, as in-place tensor operations on the
// parameters' device, the way torch.optim.RMSprop runs by default: on CUDA each operation once for
// every parameter together (the multi-tensor _foreach_ kernels), on the CPU one parameter at a
// time. The state tensors keep their storage for the life of the session, so the update can be
// captured in a CUDA graph.
#pragma once

#include "hb/plugin.h"

#include <ATen/Tensor.h>

#include <vector>

namespace hb_libtorch {

class OpProfiler;

class RmsProp {
public:
    // `parameters` are leaves whose .grad() the update reads; v starts at
    // settings.initial_square_average, in each parameter's memory format. `multi_tensor` chooses
    // the _foreach_ kernels. `layers` holds the layer of each parameter, for profiles.
    RmsProp(const hb_optimizer& settings, std::vector<at::Tensor> parameters,
            std::vector<int32_t> layers, bool multi_tensor);

    // One update from the gradients of the last backward pass; with a profiler (a profiled
    // step), the update of each parameter is a part of the step (of all of them, multi-tensor).
    void step(OpProfiler* profiler = nullptr);
    bool multi_tensor() const { return multi_tensor_; }
    // The squared-gradient averages, one canonical (dense, row-major) host buffer per parameter.
    void load_square_averages(const float* const* buffers);

    const hb_optimizer& settings() const { return settings_; }

private:
    void step_each(OpProfiler* profiler);
    void step_multi_tensor();

    hb_optimizer settings_;
    bool multi_tensor_ = false;
    std::vector<at::Tensor> parameters_, square_averages_, momentum_buffers_;
    std::vector<int32_t> layers_;
};

}  // namespace hb_libtorch
