#include "session.hpp"

#include "hb/host_state.hpp"
#include "hb/phase_timer.hpp"

#include <omp.h>

namespace onednn_backend {

const std::vector<hb::OptionSpec>& OnednnSession::option_specs() {
    static const std::vector<hb::OptionSpec> specs = {
        hb::threads_option(),
        hb::bool_option("fuse_batchnorm_relu", true,
                        "batch norm and the ReLU after it as one primitive"),
        hb::bool_option("native_pooling", true,
                        "oneDNN's pooling primitive, else the plugin's own"),
        hb::choice_option("layout", {"blocked", "plain"}, "blocked",
                          "the activations' memory format"),
    };
    return specs;
}

NetworkSettings OnednnSession::parse(const hb_session_desc& desc) {
    hb::check_session_desc(desc);
    hb::require_cpu(desc, "the oneDNN backend");

    const hb::Options options(desc.num_options, desc.options, option_specs());
    NetworkSettings s;
    s.threads = options.get_threads();
    s.fuse_batchnorm_relu = options.get_bool("fuse_batchnorm_relu");
    s.native_pooling = options.get_bool("native_pooling");
    s.plain_layout = options.get_string("layout") == "plain";
    s.input_gradient = hb::wants_input_gradient(desc);
    s.placement = desc.placement;
    s.optimizer = *desc.optimizer;
    // oneDNN sizes its work for the OpenMP thread count in force when primitives are created.
    omp_set_num_threads(s.threads);
    return s;
}

OnednnSession::OnednnSession(const hb_session_desc& desc)
    : settings_(parse(desc)), network_(*desc.graph, settings_) {}

void OnednnSession::use_threads() const {
    // The OpenMP thread count belongs to the calling thread; the harness may call from another.
    if (omp_get_max_threads() != settings_.threads) omp_set_num_threads(settings_.threads);
}

void OnednnSession::load_state(const float* const* tensors) {
    use_threads();
    const Graph& graph = network_.graph();
    for (int t = 0; t < static_cast<int>(graph.tensors.size()); ++t)
        network_.load_tensor(t, tensors[t]);
}

void OnednnSession::load_optimizer_state(const float* const* square_averages) {
    use_threads();
    const std::vector<int> slots = hb::trainable_slots(network_.graph());
    for (int t = 0; t < static_cast<int>(slots.size()); ++t)
        if (slots[t] >= 0) network_.load_square_average(t, square_averages[slots[t]]);
}

void OnednnSession::set_batches(int32_t count, const float* const* inputs,
                                const float* const* targets) {
    use_threads();
    network_.set_batches(count, inputs, targets);
}

std::vector<hb_gradient_buffer> OnednnSession::gradient_buffers() {
    std::vector<hb_gradient_buffer> buffers;
    for (const Network::GradientBuffer& g : network_.gradient_buffers())
        buffers.push_back({g.tensor, HB_MEMORY_HOST, g.data, g.floats});
    return buffers;
}

hb::StepResult OnednnSession::forward_backward(int32_t batch, const hb::GradientReady& ready) {
    use_threads();
    network_.begin_step();
    hb::PhaseTimer timer;
    hb::StepResult result;
    result.loss = network_.forward(batch);
    result.forward_ms = timer.lap();
    network_.backward(ready);
    result.backward_ms = timer.lap();
    return result;
}

hb::StepResult OnednnSession::apply_update() {
    use_threads();
    hb::PhaseTimer timer;
    network_.update();
    hb::StepResult result;
    result.optimizer_ms = timer.lap();
    return result;
}

void OnednnSession::read_state(float* const* tensors) {
    use_threads();
    const Graph& graph = network_.graph();
    for (int t = 0; t < static_cast<int>(graph.tensors.size()); ++t)
        network_.read_tensor(t, tensors[t]);
}

void OnednnSession::read_gradients(float* const* gradients) {
    use_threads();
    const Graph& graph = network_.graph();
    for (int t = 0; t < static_cast<int>(graph.tensors.size()); ++t)
        if (graph.tensors[t].trainable && gradients[t]) network_.read_gradient(t, gradients[t]);
}

void OnednnSession::read_input_gradient(float* gradient) {
    use_threads();
    network_.read_input_gradient(gradient);
}

uint64_t OnednnSession::peak_memory_bytes() {
    return network_.allocated_bytes();
}

std::string OnednnSession::manifest_json() {
    return network_.manifest_json();
}

void OnednnSession::set_profiling(bool enabled) {
    network_.set_profiling(enabled);
}

const std::vector<hb_event>& OnednnSession::events() {
    return network_.events();
}

}  // namespace onednn_backend
