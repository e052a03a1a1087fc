#include "session.hpp"

#include "hb/json.hpp"
#include "hb/manifest.hpp"
#include "hb/phase_timer.hpp"

#include <algorithm>
#include <type_traits>

namespace hb_reference {

std::unique_ptr<hb::Session> make_session(const hb_session_desc& desc) {
    const Settings settings = parse_settings(desc);
    if (settings.fp64) return std::make_unique<SessionOf<double>>(desc, settings);
    return std::make_unique<SessionOf<float>>(desc, settings);
}

template <class T>
SessionOf<T>::SessionOf(const hb_session_desc& desc) : SessionOf(desc, parse_settings(desc)) {
    if (settings_.fp64 != std::is_same_v<T, double>)
        throw hb::Error("option 'math': this session computes in another", HB_UNSUPPORTED);
}

template <class T>
SessionOf<T>::SessionOf(const hb_session_desc& desc, const Settings& settings)
    : settings_(settings),
      pool_(settings_.threads),
      graph_(hb::import_graph(*desc.graph, {"reference", true})),
      state_(graph_, settings_.optimizer),
      step_(graph_, state_, pool_, settings_.kernel) {
    step_.set_input_gradient(hb::wants_input_gradient(desc));
    step_.set_random_rounding(settings_.rounding);
}

template <class T>
void SessionOf<T>::load_state(const float* const* tensors) {
    state_.load_state(tensors);
}

template <class T>
void SessionOf<T>::load_optimizer_state(const float* const* square_averages) {
    state_.load_optimizer_state(square_averages);
}

template <class T>
void SessionOf<T>::set_batches(int32_t count, const float* const* inputs,
                               const float* const* targets) {
    state_.set_batches(count, inputs, targets);
    if (settings_.placement == HB_PLACEMENT_HOST) {
        staged_input_.resize(state_.input(0).size());
        staged_target_.resize(state_.target(0).size());
    }
}

template <class T>
std::vector<hb_gradient_buffer> SessionOf<T>::gradient_buffers() {
    std::vector<hb_gradient_buffer> buffers;
    if constexpr (std::is_same_v<T, float>) {
        for (int t : step_.gradient_order()) {
            std::vector<float>& g = state_.gradient(t);
            buffers.push_back({t, HB_MEMORY_HOST, g.data(), static_cast<int64_t>(g.size())});
        }
        return buffers;
    } else {
        throw hb::Error(
            "gradient_buffers: math fp64 keeps float64 gradients, and gradient "
            "buffers hold float32; use fp32 for data-parallel steps",
            HB_UNSUPPORTED);
    }
}

template <class T>
hb::StepResult SessionOf<T>::forward_backward(int32_t batch, const hb::GradientReady& ready) {
    hb::EventLog& events = step_.event_log();
    events.begin_step();

    hb::PhaseTimer timer;
    const T* input = state_.input(batch).data();
    const T* target = state_.target(batch).data();
    if (settings_.placement == HB_PLACEMENT_HOST) {
        // The batch comes from host memory each step, as a user's data loader would hand it over:
        // the copy host placement times, a device backend's copy to the device, so a transfer.
        const hb::EventLog::Scope event(events, "batch staging", -1, HB_PHASE_TRANSFER);
        std::copy_n(input, staged_input_.size(), staged_input_.begin());
        std::copy_n(target, staged_target_.size(), staged_target_.begin());
        input = staged_input_.data();
        target = staged_target_.data();
    }
    hb::StepResult result;
    result.loss = step_.forward(input, target);
    result.forward_ms = timer.lap();
    step_.backward(ready);
    result.backward_ms = timer.lap();
    return result;
}

template <class T>
hb::StepResult SessionOf<T>::apply_update() {
    hb::PhaseTimer timer;
    for (int t = 0; t < state_.num_tensors(); ++t) {
        if (!state_.trainable(t)) continue;
        const hb::EventLog::Scope event(step_.event_log(), "rmsprop_update",
                                        step_.tensor_info(t).layer, HB_PHASE_UPDATE);
        const auto count = static_cast<int64_t>(state_.tensor(t).size());
        parallel_for(pool_, count, 1 << 15,
                     [&](int64_t begin, int64_t end) { state_.update(t, begin, end); });
    }
    hb::StepResult result;
    result.optimizer_ms = timer.lap();
    return result;
}

template <class T>
void SessionOf<T>::read_state(float* const* tensors) {
    state_.read_state(tensors);
}

template <class T>
void SessionOf<T>::read_gradients(float* const* gradients) {
    state_.read_gradients(gradients);
}

template <class T>
void SessionOf<T>::read_input_gradient(float* gradient) {
    const std::vector<T>& g = step_.input_gradient();
    std::transform(g.begin(), g.end(), gradient, [](T x) { return static_cast<float>(x); });
}

template <class T>
uint64_t SessionOf<T>::peak_memory_bytes() {
    return step_.allocated_bytes() + state_.bytes() +
           (staged_input_.size() + staged_target_.size()) * sizeof(T);
}

template <class T>
void SessionOf<T>::set_profiling(bool enabled) {
    step_.event_log().set_enabled(enabled);
}

template <class T>
const std::vector<hb_event>& SessionOf<T>::events() {
    return step_.event_log().events();
}

template class SessionOf<float>;
template class SessionOf<double>;

}  // namespace hb_reference
