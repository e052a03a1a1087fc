// A training session of the reference backend: the graph executed in float32 on the CPU, updated
// with RMSProp after every step.
#pragma once

#include "hb/plugin.hpp"
#include "network.hpp"
#include "optimizer.hpp"
#include "thread_pool.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace reference {

class ReferenceSession : public hb::Session {
public:
    // The options it takes, as the plugin declares them: `threads` (default: the hardware's
    // thread count) and `gemm_kernel` (auto, portable or avx2_fma; auto picks the fastest this
    // CPU runs).
    static const std::vector<hb::OptionSpec>& option_specs();
    // Accepts only the device "cpu" (HB_UNAVAILABLE otherwise) and those options. Copies
    // everything it needs from `desc`.
    explicit ReferenceSession(const hb_session_desc& desc);

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
    // Per-operation events: each layer's forward and backward, each tensor's update, the rest
    // of the step (docs/design.md §3 "Profiling").
    void set_profiling(bool enabled) override;
    const std::vector<hb_event>& events() override;
    // The step in two halves (docs/design.md §3): step() is forward_backward() then
    // apply_update(), which reads the gradients where the buffers point.
    std::vector<hb_gradient_buffer> gradient_buffers() override;
    hb::StepResult forward_backward(int32_t batch, const hb::GradientReady& ready) override;
    hb::StepResult apply_update() override;

    int threads() const { return pool_.size(); }

private:
    struct Settings {
        int threads = 1;
        TileKernel kernel = TileKernel::portable;
        hb_placement placement = HB_PLACEMENT_DEVICE;
        hb_optimizer optimizer{};
    };
    static Settings parse(const hb_session_desc& desc);

    Settings settings_;
    ThreadPool pool_;
    Network<float> network_;
    std::vector<RmsPropState<float>> optimizer_state_;  // per tensor; empty for running statistics
    std::vector<std::vector<float>> inputs_, targets_;
    std::vector<float> staged_input_, staged_target_;  // host placement: this step's batch
};

}  // namespace reference
