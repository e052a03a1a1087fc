// One training step of the LibTorch backend: the network's forward pass, autograd's backward pass
// into gradient buffers allocated once, and RMSProp, eagerly or as a captured CUDA graph; the
// batches it trains on. The session (session.hpp) times and profiles it and answers the ABI.
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
#include <utility>
#include <vector>

namespace hb_libtorch {

class GradientReadiness;

class TrainingStep {
public:
    TrainingStep(const hb_graph& graph, const Settings& settings);
    ~TrainingStep();

    Network& network() { return network_; }
    const Network& network() const { return network_; }
    RmsProp& optimizer() { return optimizer_; }
    const RmsProp& optimizer() const { return optimizer_; }
    // With cuda_graphs: every step is captured_step(); replaying once it has been captured.
    bool capturing() const { return captured_step_ != nullptr; }
    bool replaying() const { return captured_step_ && captured_step_->captured(); }
    // The phase events of a step on a CUDA device; null on the CPU.
    PhaseEvents* events() { return events_.get(); }

    // The session's calls of the same names, on the network's tensors (float32 on the host).
    void load_state(const float* const* tensors);
    void read_state(float* const* tensors) const;
    void read_gradients(float* const* gradients) const;
    void read_input_gradient(float* gradient) const;
    // Device placement: the batches on the device. Host placement: copies in host memory.
    void set_batches(int32_t count, const float* const* inputs, const float* const* targets);

    // An eager step's first half: the batch staged (timed as part of the forward pass), the
    // gradients zeroed, forward and backward; the loss, not yet read back. `result` receives the
    // phase times on the CPU (where the operations are synchronous); `ready`, when not null,
    // hears of each gradient buffer as it is final. `profiler` is the step's while profiled.
    at::Tensor passes(size_t batch, hb::StepResult& result, OpProfiler* profiler,
                      const hb::GradientReady* ready);
    // The optimizer's update from what the gradient buffers hold.
    void update(hb::StepResult* times, OpProfiler* profiler);
    double read_loss(const at::Tensor& loss, OpProfiler* profiler);
    // A whole step through the captured CUDA graph: eager at the first call, captured at the
    // second, replayed from then on. Returns the loss.
    double captured_step(size_t batch);

    // The gradient buffers in the order backward completes them: the parameters' .grad()
    // tensors, and their indices among the network's tensors.
    const std::vector<at::Tensor>& gradients() const { return gradients_; }
    const std::vector<int>& gradient_tensors() const { return gradient_tensors_; }

private:
    std::pair<at::Tensor, at::Tensor> stage(size_t b) const;
    void clear_gradients(OpProfiler* profiler);
    at::Tensor forward_backward(const at::Tensor& input, const at::Tensor& target,
                                hb::StepResult* times, OpProfiler* profiler,
                                const hb::GradientReady* ready);
    void set_up_gradients();
    at::TensorOptions device_options() const;

    const Settings& settings_;
    c10::MemoryFormat format_;
    Network network_;
    RmsProp optimizer_;
    std::vector<at::Tensor> inputs_, targets_;
    std::unique_ptr<CapturedStep> captured_step_;
    int64_t captured_calls_ = 0;
    std::unique_ptr<PhaseEvents> events_;                     // CUDA devices
    at::Tensor static_input_, static_target_, static_loss_;  // what the CUDA graph reads and writes
    at::Tensor input_gradient_;
    std::vector<at::Tensor> gradients_;
    std::vector<int> gradient_tensors_;
    std::unique_ptr<GradientReadiness> readiness_;  // split_step.hpp
};

}  // namespace hb_libtorch
