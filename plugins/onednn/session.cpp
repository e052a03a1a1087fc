#include "session.hpp"

#include <omp.h>

#include <chrono>

namespace onednn_backend {
namespace {

using Clock = std::chrono::steady_clock;

double milliseconds(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double, std::milli>(to - from).count();
}

}  // namespace

const std::vector<hb::OptionSpec>& OnednnSession::option_specs() {
    static const std::vector<hb::OptionSpec> specs = {
        hb::threads_option(),
        hb::bool_option("fuse_batchnorm_relu",
                        "batch norm and the ReLU after it as one primitive (default: true)"),
        hb::bool_option("native_pooling",
                        "oneDNN's pooling primitive, else the plugin's own (default: true)"),
        hb::choice_option("layout", {"blocked", "plain"},
                          "the activations' memory format (default: blocked)"),
    };
    return specs;
}

NetworkSettings OnednnSession::parse(const hb_session_desc& desc) {
    hb::check_session_desc(desc);
    hb::require_cpu(desc, "the oneDNN backend");

    const hb::Options options(desc.num_options, desc.options, option_specs());
    NetworkSettings s;
    s.threads = options.get_threads();
    s.fuse_batchnorm_relu = options.get_bool("fuse_batchnorm_relu", true);
    s.native_pooling = options.get_bool("native_pooling", true);
    s.plain_layout = options.get_string("layout", "blocked") == "plain";
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
    const Graph& graph = network_.graph();
    size_t k = 0;
    for (int t = 0; t < static_cast<int>(graph.tensors.size()); ++t) {
        if (!graph.tensors[t].trainable) continue;
        network_.load_square_average(t, square_averages[k++]);
    }
}

void OnednnSession::set_batches(int32_t count, const float* const* inputs,
                                const float* const* targets) {
    use_threads();
    network_.set_batches(count, inputs, targets);
}

hb::StepResult OnednnSession::step(int32_t batch) {
    hb::StepResult result = forward_backward(batch, {});
    result.optimizer_ms = apply_update().optimizer_ms;
    return result;
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
    const auto start = Clock::now();
    hb::StepResult result;
    result.loss = network_.forward(batch);
    const auto forward_end = Clock::now();
    network_.backward(ready);
    const auto backward_end = Clock::now();
    result.forward_ms = milliseconds(start, forward_end);
    result.backward_ms = milliseconds(forward_end, backward_end);
    return result;
}

hb::StepResult OnednnSession::apply_update() {
    use_threads();
    const auto start = Clock::now();
    network_.update();
    hb::StepResult result;
    result.optimizer_ms = milliseconds(start, Clock::now());
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
