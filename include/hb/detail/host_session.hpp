// hb::HostSession's own work (hb/host_session.hpp): included from there, not on its own.
#pragma once

#include "hb/manifest.hpp"
#include "hb/phase_timer.hpp"
#include "hb/session_desc.hpp"

#include <algorithm>

namespace hb {
namespace detail {

inline const hb_session_desc& checked_host_desc(const hb_session_desc& desc,
                                                const std::string& backend) {
    check_session_desc(desc);
    require_cpu(desc, backend);
    return desc;
}

}  // namespace detail

inline HostSession::HostSession(const hb_session_desc& desc, const std::string& backend)
    : graph_(import_graph(*detail::checked_host_desc(desc, backend).graph, {backend, false})),
      state_(graph_, *desc.optimizer),
      placement_(desc.placement),
      input_gradient_wanted_(wants_input_gradient(desc)),
      values_(graph_.values.size()),
      gradients_(graph_.values.size()),
      saved_(graph_.layers.size()) {
    for (size_t v = 0; v < values_.size(); ++v) {
        if (static_cast<int>(v) != graph_.input)
            values_[v].resize(static_cast<size_t>(graph_.values[v].elements()));
        gradients_[v].resize(static_cast<size_t>(graph_.values[v].elements()));
    }
    // The gradient buffers in the order they are final: the trainable tensors no layer reads
    // (final at once, zero), then each layer's, last layer first.
    std::vector<int> layer_tensors;
    for (int l = graph_.num_layers() - 1; l >= 0; --l)
        for (int t : {graph_.layers[static_cast<size_t>(l)].weight,
                      graph_.layers[static_cast<size_t>(l)].bias})
            if (t >= 0) layer_tensors.push_back(t);
    for (int t = 0; t < state_.num_tensors(); ++t)
        if (state_.trainable(t) &&
            std::find(layer_tensors.begin(), layer_tensors.end(), t) == layer_tensors.end())
            gradient_order_.push_back(t);
    unread_tensors_ = gradient_order_.size();
    gradient_order_.insert(gradient_order_.end(), layer_tensors.begin(), layer_tensors.end());
}

inline void HostSession::load_state(const float* const* tensors) {
    state_.load_state(tensors);
}
inline void HostSession::load_optimizer_state(const float* const* square_averages) {
    state_.load_optimizer_state(square_averages);
}
inline void HostSession::set_batches(int32_t count, const float* const* inputs,
                                     const float* const* targets) {
    state_.set_batches(count, inputs, targets);
}
inline void HostSession::read_state(float* const* tensors) {
    state_.read_state(tensors);
}
inline void HostSession::read_gradients(float* const* gradients) {
    state_.read_gradients(gradients);
}
inline void HostSession::read_input_gradient(float* gradient) {
    const std::vector<float>& g = gradients_[static_cast<size_t>(graph_.input)];
    std::copy(g.begin(), g.end(), gradient);
}

inline std::vector<hb_gradient_buffer> HostSession::gradient_buffers() {
    std::vector<hb_gradient_buffer> buffers;
    for (int t : gradient_order_) {
        std::vector<float>& g = state_.gradient(t);
        buffers.push_back({t, HB_MEMORY_HOST, g.data(), static_cast<int64_t>(g.size())});
    }
    return buffers;
}

inline StepResult HostSession::forward_backward(int32_t batch, const GradientReady& ready) {
    events_.begin_step();
    PhaseTimer timer;
    StepResult result;
    input_ = state_.input(batch).data();
    target_ = state_.target(batch).data();
    if (placement_ == HB_PLACEMENT_HOST) {
        // The batch comes from host memory each step, as a framework's feed hands it over.
        const EventLog::Scope event(events_, "batch staging", -1, HB_PHASE_TRANSFER);
        staged_input_.assign(input_, input_ + state_.input(batch).size());
        staged_target_.assign(target_, target_ + state_.target(batch).size());
        input_ = staged_input_.data();
        target_ = staged_target_.data();
    }
    for (int l = 0; l < graph_.num_layers(); ++l) {
        LayerPass pass = pass_of(l);
        const EventLog::Scope event(events_, layer_event_name(pass.layer.kind, true), l,
                                    HB_PHASE_FORWARD);
        forward(pass);
        if (pass.layer.kind == HB_LAYER_MSE_LOSS) result.loss += pass.y[0];
    }
    result.forward_ms = timer.lap();
    backward(ready);
    result.backward_ms = timer.lap();
    return result;
}

inline StepResult HostSession::apply_update() {
    PhaseTimer timer;
    for (int t : gradient_order_) {
        const EventLog::Scope event(events_, "rmsprop_update",
                                    graph_.tensors[static_cast<size_t>(t)].layer, HB_PHASE_UPDATE);
        state_.update(t, 0, static_cast<int64_t>(state_.tensor(t).size()));
    }
    StepResult result;
    result.optimizer_ms = timer.lap();
    return result;
}

inline uint64_t HostSession::peak_memory_bytes() {
    uint64_t elements = staged_input_.size() + staged_target_.size();
    for (const auto* list : {&values_, &gradients_, &saved_, &scratch_})
        for (const std::vector<float>& v : *list) elements += v.size();
    return state_.bytes() + elements * sizeof(float);
}

inline void HostSession::set_profiling(bool enabled) {
    events_.set_enabled(enabled);
}
inline const std::vector<hb_event>& HostSession::events() {
    return events_.events();
}

inline std::string HostSession::manifest_json() {
    return manifest().str();
}
inline JsonObject HostSession::manifest() const {
    JsonObject m = hb::manifest(Math::fp32, 1);
    m.add_string("layout", "nchw").add_string("placement", placement_word(placement_));
    return m;
}

inline LayerPass HostSession::pass_of(int l) {
    const Layer& layer = graph_.layers[static_cast<size_t>(l)];
    LayerPass pass{layer,
                   {},
                   {},
                   values_[static_cast<size_t>(layer.output)].data(),
                   graph_.values[static_cast<size_t>(layer.output)],
                   tensor(layer.weight),
                   tensor(layer.bias),
                   tensor(layer.running_mean),
                   tensor(layer.running_var),
                   target_,
                   saved_[static_cast<size_t>(l)],
                   nullptr,
                   {},
                   nullptr,
                   nullptr};
    for (int v : layer.inputs) {
        pass.x.push_back(v == graph_.input ? input_ : values_[static_cast<size_t>(v)].data());
        pass.x_dims.push_back(graph_.values[static_cast<size_t>(v)]);
    }
    return pass;
}
inline float* HostSession::tensor(int t) {
    return t < 0 ? nullptr : state_.tensor(t).data();
}
inline float* HostSession::gradient(int t) {
    return t < 0 ? nullptr : state_.gradient(t).data();
}

inline void HostSession::forward(const LayerPass& p) {
    switch (p.layer.kind) {
        case HB_LAYER_CONV2D:
            return conv2d(p);
        case HB_LAYER_BATCHNORM:
            return batchnorm(p);
        case HB_LAYER_RELU:
            return relu(p);
        case HB_LAYER_MAXPOOL2D:
            return maxpool2d(p);
        case HB_LAYER_UPSAMPLE:
            return upsample(p);
        case HB_LAYER_ADD:
            return add(p);
        case HB_LAYER_MSE_LOSS:
            return mse_loss(p);
    }
}

// In reverse, each layer's gradients written where they are the first a value receives, and
// otherwise written to scratch and added: a value read by several layers gets their sum.
inline void HostSession::backward(const GradientReady& ready) {
    std::vector<bool> written(values_.size(), false);
    for (const Layer& l : graph_.layers)
        if (l.kind == HB_LAYER_MSE_LOSS) {
            gradients_[static_cast<size_t>(l.output)].assign(1, 1.0f);
            written[static_cast<size_t>(l.output)] = true;
        }
    size_t completed = 0;
    while (completed < unread_tensors_) ready(static_cast<int32_t>(completed++));
    for (int l = graph_.num_layers() - 1; l >= 0; --l) {
        LayerPass pass = pass_of(l);
        std::vector<float>& dy = gradients_[static_cast<size_t>(pass.layer.output)];
        if (!written[static_cast<size_t>(pass.layer.output)])
            std::fill(dy.begin(), dy.end(), 0.0f);  // an output no layer reads
        pass.dy = dy.data();
        pass.dweight = gradient(pass.layer.weight);
        pass.dbias = gradient(pass.layer.bias);
        scratch_.resize(std::max(scratch_.size(), pass.layer.inputs.size()));
        std::vector<bool> to_add(pass.layer.inputs.size(), false);
        for (size_t s = 0; s < pass.layer.inputs.size(); ++s) {
            const auto v = static_cast<size_t>(pass.layer.inputs[s]);
            if (static_cast<int>(v) == graph_.input && !input_gradient_wanted_) {
                pass.dx.push_back(nullptr);
            } else if (!written[v]) {
                pass.dx.push_back(gradients_[v].data());
                written[v] = true;
            } else {
                scratch_[s].resize(gradients_[v].size());
                pass.dx.push_back(scratch_[s].data());
                to_add[s] = true;
            }
        }
        {
            const EventLog::Scope event(events_, layer_event_name(pass.layer.kind, false), l,
                                        HB_PHASE_BACKWARD);
            backward(pass);
        }
        for (size_t s = 0; s < to_add.size(); ++s) {
            if (!to_add[s]) continue;
            std::vector<float>& sum = gradients_[static_cast<size_t>(pass.layer.inputs[s])];
            for (size_t i = 0; i < sum.size(); ++i) sum[i] += scratch_[s][i];
        }
        for (int t : {pass.layer.weight, pass.layer.bias})
            if (t >= 0) ready(static_cast<int32_t>(completed++));
    }
}
inline void HostSession::backward(const LayerPass& p) {
    switch (p.layer.kind) {
        case HB_LAYER_CONV2D:
            return conv2d_backward(p);
        case HB_LAYER_BATCHNORM:
            return batchnorm_backward(p);
        case HB_LAYER_RELU:
            return relu_backward(p);
        case HB_LAYER_MAXPOOL2D:
            return maxpool2d_backward(p);
        case HB_LAYER_UPSAMPLE:
            return upsample_backward(p);
        case HB_LAYER_ADD:
            return add_backward(p);
        case HB_LAYER_MSE_LOSS:
            return mse_loss_backward(p);
    }
}
}  // namespace hb
