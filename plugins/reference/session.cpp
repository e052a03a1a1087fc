#include "session.hpp"

#include "hb/json.hpp"

#include <algorithm>
#include <chrono>

namespace reference {
namespace {

using Clock = std::chrono::steady_clock;

double milliseconds(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double, std::milli>(to - from).count();
}

}  // namespace

const std::vector<hb::OptionSpec>& ReferenceSession::option_specs() {
    static const std::vector<hb::OptionSpec> specs = {
        hb::threads_option(),
        hb::choice_option(
            "gemm_kernel",
            {"auto", to_string(TileKernel::portable), to_string(TileKernel::avx2_fma)},
            "the GEMM's inner kernel; auto: the fastest this CPU runs (default: auto)"),
    };
    return specs;
}

ReferenceSession::Settings ReferenceSession::parse(const hb_session_desc& desc) {
    hb::check_session_desc(desc);
    hb::require_cpu(desc, "the reference backend");

    const hb::Options options(desc.num_options, desc.options, option_specs());
    Settings s;
    s.threads = options.get_threads();
    const std::string kernel = options.get_string("gemm_kernel", "auto");
    s.kernel = kernel == "auto"                            ? fastest_tile_kernel<float>()
               : kernel == to_string(TileKernel::avx2_fma) ? TileKernel::avx2_fma
                                                           : TileKernel::portable;
    s.placement = desc.placement;
    s.optimizer = *desc.optimizer;
    return s;
}

ReferenceSession::ReferenceSession(const hb_session_desc& desc)
    : settings_(parse(desc)),
      pool_(settings_.threads),
      network_(*desc.graph, pool_, settings_.kernel) {
    network_.set_input_gradient(hb::wants_input_gradient(desc));
    for (int i = 0; i < network_.num_tensors(); ++i) {
        const TensorInfo& t = network_.tensor_info(i);
        optimizer_state_.push_back(t.trainable
                                       ? make_rmsprop_state<float>(settings_.optimizer, t.elements)
                                       : RmsPropState<float>{});
    }
}

void ReferenceSession::load_state(const float* const* tensors) {
    for (int i = 0; i < network_.num_tensors(); ++i) {
        std::vector<float>& t = network_.tensor(i);
        std::copy(tensors[i], tensors[i] + t.size(), t.begin());
    }
}

void ReferenceSession::load_optimizer_state(const float* const* square_averages) {
    size_t k = 0;
    for (int i = 0; i < network_.num_tensors(); ++i) {
        if (!network_.tensor_info(i).trainable) continue;
        const float* source = square_averages[k++];
        std::vector<float>& v = optimizer_state_[i].square_average;
        std::copy(source, source + v.size(), v.begin());
    }
}

void ReferenceSession::set_batches(int32_t count, const float* const* inputs,
                                   const float* const* targets) {
    const auto input_size = static_cast<size_t>(network_.input_elements());
    const auto target_size = static_cast<size_t>(network_.target_elements());
    inputs_.clear();
    targets_.clear();
    for (int32_t b = 0; b < count; ++b) {
        inputs_.emplace_back(inputs[b], inputs[b] + input_size);
        targets_.emplace_back(targets[b], targets[b] + target_size);
    }
    if (settings_.placement == HB_PLACEMENT_HOST) {
        staged_input_.resize(input_size);
        staged_target_.resize(target_size);
    }
}

hb::StepResult ReferenceSession::step(int32_t batch) {
    hb::StepResult result = forward_backward(batch, {});
    result.optimizer_ms = apply_update().optimizer_ms;
    return result;
}

std::vector<hb_gradient_buffer> ReferenceSession::gradient_buffers() {
    std::vector<hb_gradient_buffer> buffers;
    for (int t : network_.gradient_order()) {
        std::vector<float>& g = network_.gradient(t);
        buffers.push_back({t, HB_MEMORY_HOST, g.data(), static_cast<int64_t>(g.size())});
    }
    return buffers;
}

hb::StepResult ReferenceSession::forward_backward(int32_t batch, const hb::GradientReady& ready) {
    const auto b = static_cast<size_t>(batch);
    hb::EventLog& events = network_.event_log();
    events.begin_step();

    const auto start = Clock::now();
    const float* input = inputs_[b].data();
    const float* target = targets_[b].data();
    if (settings_.placement == HB_PLACEMENT_HOST) {
        // The batch comes from host memory each step, as a user's data loader would hand it over:
        // the copy host placement times, a device backend's copy to the device, so a transfer.
        const hb::EventLog::Scope event(events, "batch staging", -1, HB_PHASE_TRANSFER);
        std::copy(inputs_[b].begin(), inputs_[b].end(), staged_input_.begin());
        std::copy(targets_[b].begin(), targets_[b].end(), staged_target_.begin());
        input = staged_input_.data();
        target = staged_target_.data();
    }
    hb::StepResult result;
    result.loss = network_.forward(input, target);
    const auto forward_end = Clock::now();
    network_.backward(ready);
    const auto backward_end = Clock::now();
    result.forward_ms = milliseconds(start, forward_end);
    result.backward_ms = milliseconds(forward_end, backward_end);
    return result;
}

hb::StepResult ReferenceSession::apply_update() {
    const auto start = Clock::now();
    for (int i = 0; i < network_.num_tensors(); ++i) {
        const TensorInfo& info = network_.tensor_info(i);
        if (!info.trainable) continue;
        const hb::EventLog::Scope event(network_.event_log(), "rmsprop_update", info.layer,
                                        HB_PHASE_UPDATE);
        std::vector<float>& p = network_.tensor(i);
        rmsprop_update(pool_, settings_.optimizer, static_cast<int64_t>(p.size()), p.data(),
                       network_.gradient(i).data(), optimizer_state_[i]);
    }
    hb::StepResult result;
    result.optimizer_ms = milliseconds(start, Clock::now());
    return result;
}

void ReferenceSession::read_state(float* const* tensors) {
    for (int i = 0; i < network_.num_tensors(); ++i) {
        const std::vector<float>& t = network_.tensor(i);
        std::copy(t.begin(), t.end(), tensors[i]);
    }
}

void ReferenceSession::read_gradients(float* const* gradients) {
    for (int i = 0; i < network_.num_tensors(); ++i) {
        if (!network_.tensor_info(i).trainable || !gradients[i]) continue;
        const std::vector<float>& g = network_.gradient(i);
        std::copy(g.begin(), g.end(), gradients[i]);
    }
}

void ReferenceSession::read_input_gradient(float* gradient) {
    const std::vector<float>& g = network_.input_gradient();
    std::copy(g.begin(), g.end(), gradient);
}

uint64_t ReferenceSession::peak_memory_bytes() {
    uint64_t elements = staged_input_.size() + staged_target_.size();
    for (const auto& s : optimizer_state_)
        elements += s.square_average.size() + s.momentum_buffer.size();
    for (const auto& b : inputs_) elements += b.size();
    for (const auto& b : targets_) elements += b.size();
    return network_.allocated_bytes() + elements * sizeof(float);
}

void ReferenceSession::set_profiling(bool enabled) {
    network_.event_log().set_enabled(enabled);
}

const std::vector<hb_event>& ReferenceSession::events() {
    return network_.event_log().events();
}

std::string ReferenceSession::manifest_json() {
    const std::string tile =
        std::to_string(Gemm<float>::MR) + "x" + std::to_string(Gemm<float>::NR);
    const std::string blocks = std::to_string(Gemm<float>::MC) + "x" +
                               std::to_string(Gemm<float>::KC) + "x" +
                               std::to_string(Gemm<float>::NC);
    hb::JsonObject convolution;
    convolution.add_string("algorithm", "im2col + packed cache-blocked GEMM")
        .add_string("pointwise", "1x1 stride-1 convolutions multiply the input directly")
        .add("im2col_layers", network_.im2col_convolutions())
        .add("pointwise_layers", network_.pointwise_convolutions())
        .add_string("gemm_kernel", to_string(network_.tile_kernel()))
        .add_string("gemm_register_tile", tile)
        .add_string("gemm_blocks_mkn", blocks);
    hb::JsonObject m;
    m.add_string("math", "fp32")
        .add("threads", threads())
        .add_string("layout", "nchw")
        .add_string("placement", settings_.placement == HB_PLACEMENT_HOST ? "host" : "device")
        .add("convolution", convolution.str())
        .add_string("batchnorm", "batch statistics and reductions accumulated in double")
        .add("fusions", std::string("[]"))
        .add("workspace_bytes", network_.workspace_bytes())
        .add_bool("same_bits_for_any_thread_count", true);
    return m.str();
}

}  // namespace reference
