// A training session of the oneDNN backend: options, argument checks and the timing of the three
// phases around the TrainingStep that does the work.
#pragma once

#include "hb/plugin.hpp"
#include "training_step.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace hb_onednn {

class Session : public hb::SplitStepSession {
public:
    // parse_settings(desc) (options.hpp).
    explicit Session(const hb_session_desc& desc);

    void load_state(const float* const* tensors) override;
    void load_optimizer_state(const float* const* square_averages) override;
    void set_batches(int32_t count, const float* const* inputs,
                     const float* const* targets) override;
    void read_state(float* const* tensors) override;
    void read_gradients(float* const* gradients) override;
    // ABI 2.3; the SDK calls it only where the session description asked for it.
    void read_input_gradient(float* gradient) override;
    uint64_t peak_memory_bytes() override;
    std::string manifest_json() override;
    // One event per primitive or loop the step runs (docs/design.md §3 "Profiling").
    void set_profiling(bool enabled) override;
    const std::vector<hb_event>& events() override;
    // The step in two halves (docs/design.md §3): the buffers are the gradients in the layouts
    // the update reads.
    std::vector<hb_gradient_buffer> gradient_buffers() override;
    hb::StepResult forward_backward(int32_t batch, const hb::GradientReady& ready) override;
    hb::StepResult apply_update() override;

    int threads() const { return settings_.threads; }

private:
    void use_threads() const;

    Settings settings_;
    TrainingStep step_;
};

}  // namespace hb_onednn
