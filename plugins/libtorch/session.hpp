// A training session of the LibTorch backend: the graph as ATen operations on one device,
// autograd for the backward pass, RMSProp as tensor operations, optionally one CUDA graph per step
// (training_step.hpp). A step runs in two halves (forward and backward, then the update), which the
// harness may also call one at a time (ABI 2.2); the parameters' .grad() tensors are the gradient
// buffers between them, allocated once and zeroed in place by every step.
#pragma once

#include "hb/plugin.hpp"
#include "op_profiler.hpp"
#include "options.hpp"
#include "training_step.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hb_libtorch {

class Session : public hb::Session {
public:
    explicit Session(const hb_session_desc& desc);

    void load_state(const float* const* tensors) override;
    void load_optimizer_state(const float* const* square_averages) override;
    void set_batches(int32_t count, const float* const* inputs,
                     const float* const* targets) override;
    hb::StepResult step(int32_t batch) override;
    void read_state(float* const* tensors) override;
    void read_gradients(float* const* gradients) override;
    void read_input_gradient(float* gradient) override;
    uint64_t peak_memory_bytes() override;
    std::string manifest_json() override;
    // Per-operation events (ABI 2.1). Refused with cuda_graphs: a replay is one opaque launch.
    void set_profiling(bool enabled) override;
    const std::vector<hb_event>& events() override;
    // Data-parallel steps (ABI 2.2). Refused with cuda_graphs (one graph holds the whole step)
    // and in fp64 (the buffers are float32).
    std::vector<hb_gradient_buffer> gradient_buffers() override;
    void* gradient_stream() override;
    hb::StepResult forward_backward(int32_t batch, const hb::GradientReady& ready) override;
    hb::StepResult apply_update() override;

private:
    void refuse_split(const char* call) const;

    Settings settings_;
    TrainingStep step_;
    OpProfiler profiler_;
    // The profiled split step, from forward_backward to apply_update.
    std::unique_ptr<OpProfiler::Step> split_profile_;
    int64_t steps_ = 0;
    uint64_t peak_memory_ = 0;
};

}  // namespace hb_libtorch
