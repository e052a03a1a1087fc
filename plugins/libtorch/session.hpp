// A training session of the LibTorch backend: the graph as ATen operations on one device,
// autograd for the backward pass, RMSProp as tensor operations, optionally one CUDA graph per step.
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

class TorchSession : public hb::Session {
public:
    explicit TorchSession(const hb_session_desc& desc);

    void load_state(const float* const* tensors) override;
    void load_optimizer_state(const float* const* square_averages) override;
    void set_batches(int32_t count, const float* const* inputs,
                     const float* const* targets) override;
    hb::StepResult step(int32_t batch) override;
    void read_state(float* const* tensors) override;
    void read_gradients(float* const* gradients) override;
    uint64_t peak_memory_bytes() override;
    std::string manifest_json() override;
    // Per-operation events (ABI 2.1). Refused with cuda_graphs: a replay is one opaque launch.
    void set_profiling(bool enabled) override;
    const std::vector<hb_event>& events() override;

private:
    // The batch `b` on the device, in the network's memory format; in host placement this is the
    // per-step upload from host memory.
    std::pair<at::Tensor, at::Tensor> stage(size_t b) const;
    // Forward, backward and update on the given batch; `times` receives the phase times when it
    // is not null (on the CPU, where the operations are synchronous); on CUDA the phase events
    // are recorded instead. `profiler` is the step's while it is profiled, else null.
    at::Tensor train(const at::Tensor& input, const at::Tensor& target, hb::StepResult* times,
                     OpProfiler* profiler = nullptr);
    double graph_step(size_t b);
    void clear_gradients(OpProfiler* profiler);
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
    int64_t steps_ = 0;
    uint64_t peak_memory_ = 0;
};

}  // namespace libtorch_backend
