// A training session of the LibTorch backend: the graph as ATen operations on one device,
// autograd for the backward pass, RMSProp as tensor operations, optionally one CUDA graph per step.
// A step runs in two halves (forward and backward, then the update), which the harness may also
// call one at a time (ABI 2.2); the parameters' .grad() tensors are the gradient buffers between
// them, allocated once and zeroed in place by every step.
#pragma once

#include "captured_step.hpp"
#include "hb/plugin.hpp"
#include "network.hpp"
#include "op_profiler.hpp"
#include "optimizer.hpp"
#include "options.hpp"
#include "phase_events.hpp"

#include <ATen/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace libtorch_backend {

class GradientReadiness;

class TorchSession : public hb::Session {
public:
    explicit TorchSession(const hb_session_desc& desc);
    ~TorchSession() override;

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
    // The batch `b` on the device, in the network's memory format; in host placement this is the
    // per-step upload from host memory.
    std::pair<at::Tensor, at::Tensor> stage(size_t b) const;
    // The halves of a step. `times` receives the phase times when it is not null (on the CPU,
    // where the operations are synchronous); on CUDA the phase events are recorded instead.
    // `profiler` is the step's while it is profiled, else null.
    // Zeroes the gradients, runs forward and backward on the given batch and returns the loss,
    // not yet read back; `ready`, when not null, hears of each gradient buffer as it is final.
    at::Tensor passes(const at::Tensor& input, const at::Tensor& target, hb::StepResult* times,
                      OpProfiler* profiler, const hb::GradientReady* ready);
    // The optimizer's update from what the gradient buffers hold.
    void update(hb::StepResult* times, OpProfiler* profiler);
    // An eager step's first half: the batch staged (timed as part of the forward pass), then
    // passes().
    at::Tensor eager_passes(size_t b, hb::StepResult& result, OpProfiler* profiler,
                            const hb::GradientReady* ready);
    double read_loss(const at::Tensor& loss, OpProfiler* profiler);
    double graph_step(size_t b);
    void clear_gradients(OpProfiler* profiler);
    // The .grad() of every parameter, allocated once, and the autograd hooks that report each
    // one final on the CPU.
    void set_up_gradients();
    void refuse_split(const char* call) const;
    at::TensorOptions device_options() const;

    Settings settings_;
    c10::MemoryFormat format_;
    Network network_;
    RmsProp optimizer_;
    // Device placement: the batches on the device. Host placement: copies in host memory.
    std::vector<at::Tensor> inputs_, targets_;
    std::unique_ptr<CapturedStep> captured_step_;
    std::unique_ptr<PhaseEvents> events_;  // CUDA devices
    OpProfiler profiler_;
    at::Tensor static_input_, static_target_, static_loss_;  // what the CUDA graph reads and writes
    at::Tensor input_gradient_;  // the last backward's, when the session was asked for it
    int64_t steps_ = 0;
    uint64_t peak_memory_ = 0;

    // The gradient buffers in the order backward completes them: the parameters' .grad()
    // tensors and their indices among the network's tensors.
    std::vector<at::Tensor> gradients_;
    std::vector<int> gradient_tensors_;
    std::unique_ptr<GradientReadiness> readiness_;  // split_step.hpp
    // The profiled split step, from forward_backward to apply_update.
    std::unique_ptr<OpProfiler::Step> split_profile_;
};

}  // namespace libtorch_backend
