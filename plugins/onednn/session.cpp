#include "session.hpp"

#include "hb/host_state.hpp"
#include "hb/phase_timer.hpp"

#include <omp.h>

namespace hb_onednn {
namespace {

// oneDNN sizes its work for the OpenMP thread count in force when primitives are created.
Settings with_threads_in_force(Settings s) {
    omp_set_num_threads(s.threads);
    return s;
}

}  // namespace

Session::Session(const hb_session_desc& desc)
    : settings_(with_threads_in_force(parse_settings(desc))), step_(*desc.graph, settings_) {}

void Session::use_threads() const {
    // The OpenMP thread count belongs to the calling thread; the harness may call from another.
    if (omp_get_max_threads() != settings_.threads) omp_set_num_threads(settings_.threads);
}

void Session::load_state(const float* const* tensors) {
    use_threads();
    const Graph& graph = step_.graph();
    for (int t = 0; t < static_cast<int>(graph.tensors.size()); ++t)
        step_.load_tensor(t, tensors[t]);
}

void Session::load_optimizer_state(const float* const* square_averages) {
    use_threads();
    const std::vector<int> slots = hb::trainable_slots(step_.graph());
    for (int t = 0; t < static_cast<int>(slots.size()); ++t)
        if (slots[t] >= 0) step_.load_square_average(t, square_averages[slots[t]]);
}

void Session::set_batches(int32_t count, const float* const* inputs, const float* const* targets) {
    use_threads();
    step_.set_batches(count, inputs, targets);
}

std::vector<hb_gradient_buffer> Session::gradient_buffers() {
    std::vector<hb_gradient_buffer> buffers;
    for (const TrainingStep::GradientBuffer& g : step_.gradient_buffers())
        buffers.push_back({g.tensor, HB_MEMORY_HOST, g.data, g.floats});
    return buffers;
}

hb::StepResult Session::forward_backward(int32_t batch, const hb::GradientReady& ready) {
    use_threads();
    step_.begin_step();
    hb::PhaseTimer timer;
    hb::StepResult result;
    result.loss = step_.forward(batch);
    result.forward_ms = timer.lap();
    step_.backward(ready);
    result.backward_ms = timer.lap();
    return result;
}

hb::StepResult Session::apply_update() {
    use_threads();
    hb::PhaseTimer timer;
    step_.update();
    hb::StepResult result;
    result.optimizer_ms = timer.lap();
    return result;
}

void Session::read_state(float* const* tensors) {
    use_threads();
    const Graph& graph = step_.graph();
    for (int t = 0; t < static_cast<int>(graph.tensors.size()); ++t)
        step_.read_tensor(t, tensors[t]);
}

void Session::read_gradients(float* const* gradients) {
    use_threads();
    const Graph& graph = step_.graph();
    for (int t = 0; t < static_cast<int>(graph.tensors.size()); ++t)
        if (graph.tensors[t].trainable && gradients[t]) step_.read_gradient(t, gradients[t]);
}

void Session::read_input_gradient(float* gradient) {
    use_threads();
    step_.read_input_gradient(gradient);
}

uint64_t Session::peak_memory_bytes() {
    return step_.allocated_bytes();
}

std::string Session::manifest_json() {
    return step_.manifest_json();
}

void Session::set_profiling(bool enabled) {
    step_.set_profiling(enabled);
}

const std::vector<hb_event>& Session::events() {
    return step_.events();
}

}  // namespace hb_onednn
