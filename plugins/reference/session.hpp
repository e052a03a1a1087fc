// A training session of the reference backend: the graph executed on the CPU in float32 (T =
// float), or in float64 (T = double: the check's oracle), updated with RMSProp after every step.
// The ABI hands over and reads back float32 whatever T is.
#pragma once

#include "hb/graph.hpp"
#include "hb/host_state.hpp"
#include "hb/plugin.hpp"
#include "options.hpp"
#include "thread_pool.hpp"
#include "training_step.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hb_reference {

// A session of the math mode `desc` asks for.
std::unique_ptr<hb::Session> make_session(const hb_session_desc& desc);

template <class T>
class SessionOf : public hb::SplitStepSession {
public:
    // Copies everything it needs from `desc`; the first form also checks that `desc` asks for T.
    explicit SessionOf(const hb_session_desc& desc);
    SessionOf(const hb_session_desc& desc, const Settings& settings);

    void load_state(const float* const* tensors) override;
    void load_optimizer_state(const float* const* square_averages) override;
    void set_batches(int32_t count, const float* const* inputs,
                     const float* const* targets) override;
    void read_state(float* const* tensors) override;
    void read_gradients(float* const* gradients) override;
    void read_input_gradient(float* gradient) override;
    uint64_t peak_memory_bytes() override;
    std::string manifest_json() override;
    // Per-operation events: each layer's forward and backward, each tensor's update, the rest
    // of the step (docs/design.md §3 "Profiling").
    void set_profiling(bool enabled) override;
    const std::vector<hb_event>& events() override;
    // The step in two halves (docs/design.md §3): apply_update() reads the gradients where the
    // buffers point (float32 only: in float64 there are no float32 buffers to hand out).
    std::vector<hb_gradient_buffer> gradient_buffers() override;
    hb::StepResult forward_backward(int32_t batch, const hb::GradientReady& ready) override;
    hb::StepResult apply_update() override;

    int threads() const { return pool_.size(); }

private:
    Settings settings_;
    ThreadPool pool_;
    hb::Graph graph_;
    // Parameters, running statistics, gradients, RMSProp's state and the batches.
    hb::HostState<T> state_;
    TrainingStep<T> step_;
    std::vector<T> staged_input_, staged_target_;  // host placement: this step's batch
};

extern template class SessionOf<float>;
extern template class SessionOf<double>;
using Session = SessionOf<float>;

}  // namespace hb_reference
