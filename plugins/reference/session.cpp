#include "session.hpp"

#include "hb/json.hpp"
#include "hb/manifest.hpp"
#include "hb/phase_timer.hpp"

#include <algorithm>
#include <type_traits>

namespace reference {

const std::vector<hb::OptionSpec>& option_specs() {
    static const std::vector<hb::OptionSpec> specs = {
        hb::threads_option(),
        hb::choice_option(
            "gemm_kernel",
            {"auto", to_string(TileKernel::portable), to_string(TileKernel::avx2_fma)}, "auto",
            "the GEMM's inner kernel; auto: the fastest this CPU runs"),
        hb::choice_option("precision", {"fp32", "fp64"}, "fp32",
                          "fp64: every value, gradient and optimizer state in double, the check's "
                          "oracle"),
        hb::int_option("rounding_seed", 0, int64_t{1} << 53, 0,
                       "not 0: every layer result moved by a random relative amount of at most "
                       "2^(1 - rounding_bits), this seed's draw, and rounded back: a member of the "
                       "check's rounding-noise ensemble (0: off; fp32 only)"),
        hb::int_option(
            "rounding_bits", 2, 24, 24,
            "the significand bits whose rounding rounding_seed imitates (24: float32's)"),
    };
    return specs;
}

Settings parse_settings(const hb_session_desc& desc) {
    hb::check_session_desc(desc);
    hb::require_cpu(desc, "the reference backend");

    const hb::Options options(desc.num_options, desc.options, option_specs());
    Settings s;
    s.threads = options.get_threads();
    s.fp64 = options.get_string("precision") == "fp64";
    const std::string kernel = options.get_string("gemm_kernel");
    s.kernel = kernel == "auto"                            ? (s.fp64 ? fastest_tile_kernel<double>()
                                                                     : fastest_tile_kernel<float>())
               : kernel == to_string(TileKernel::avx2_fma) ? TileKernel::avx2_fma
                                                           : TileKernel::portable;
    if (s.fp64 && s.kernel == TileKernel::avx2_fma)
        throw hb::Error("option 'gemm_kernel': avx2_fma is a float32 kernel; precision fp64 "
                        "takes auto or portable",
                        HB_UNSUPPORTED);
    s.rounding.seed = static_cast<uint64_t>(options.get_int("rounding_seed"));
    s.rounding.bits = static_cast<int>(options.get_int("rounding_bits"));
    if (s.fp64 && s.rounding.enabled())
        throw hb::Error("option 'rounding_seed': random rounding imitates float32 and narrower "
                        "formats; it takes precision fp32",
                        HB_UNSUPPORTED);
    s.placement = desc.placement;
    s.optimizer = *desc.optimizer;
    return s;
}

std::unique_ptr<hb::Session> make_session(const hb_session_desc& desc) {
    const Settings settings = parse_settings(desc);
    if (settings.fp64) return std::make_unique<ReferenceSessionOf<double>>(desc, settings);
    return std::make_unique<ReferenceSessionOf<float>>(desc, settings);
}

template <class T>
ReferenceSessionOf<T>::ReferenceSessionOf(const hb_session_desc& desc)
    : ReferenceSessionOf(desc, parse_settings(desc)) {
    if (settings_.fp64 != std::is_same_v<T, double>)
        throw hb::Error("option 'precision': this session computes in another", HB_UNSUPPORTED);
}

template <class T>
ReferenceSessionOf<T>::ReferenceSessionOf(const hb_session_desc& desc, const Settings& settings)
    : settings_(settings),
      pool_(settings_.threads),
      graph_(hb::import_graph(*desc.graph, {"reference", true})),
      state_(graph_, settings_.optimizer),
      network_(graph_, state_, pool_, settings_.kernel) {
    network_.set_input_gradient(hb::wants_input_gradient(desc));
    network_.set_random_rounding(settings_.rounding);
}

template <class T>
void ReferenceSessionOf<T>::load_state(const float* const* tensors) {
    state_.load_state(tensors);
}

template <class T>
void ReferenceSessionOf<T>::load_optimizer_state(const float* const* square_averages) {
    state_.load_optimizer_state(square_averages);
}

template <class T>
void ReferenceSessionOf<T>::set_batches(int32_t count, const float* const* inputs,
                                      const float* const* targets) {
    state_.set_batches(count, inputs, targets);
    if (settings_.placement == HB_PLACEMENT_HOST) {
        staged_input_.resize(state_.input(0).size());
        staged_target_.resize(state_.target(0).size());
    }
}

template <class T>
std::vector<hb_gradient_buffer> ReferenceSessionOf<T>::gradient_buffers() {
    std::vector<hb_gradient_buffer> buffers;
    if constexpr (std::is_same_v<T, float>) {
        for (int t : network_.gradient_order()) {
            std::vector<float>& g = state_.gradient(t);
            buffers.push_back({t, HB_MEMORY_HOST, g.data(), static_cast<int64_t>(g.size())});
        }
        return buffers;
    } else {
        throw hb::Error("gradient_buffers: precision fp64 keeps float64 gradients, and gradient "
                        "buffers hold float32; use fp32 for data-parallel steps",
                        HB_UNSUPPORTED);
    }
}

template <class T>
hb::StepResult ReferenceSessionOf<T>::forward_backward(int32_t batch,
                                                       const hb::GradientReady& ready) {
    hb::EventLog& events = network_.event_log();
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
    result.loss = network_.forward(input, target);
    result.forward_ms = timer.lap();
    network_.backward(ready);
    result.backward_ms = timer.lap();
    return result;
}

template <class T>
hb::StepResult ReferenceSessionOf<T>::apply_update() {
    hb::PhaseTimer timer;
    for (int t = 0; t < state_.num_tensors(); ++t) {
        if (!state_.trainable(t)) continue;
        const hb::EventLog::Scope event(network_.event_log(), "rmsprop_update",
                                        network_.tensor_info(t).layer, HB_PHASE_UPDATE);
        const auto count = static_cast<int64_t>(state_.tensor(t).size());
        parallel_for(pool_, count, 1 << 15,
                     [&](int64_t begin, int64_t end) { state_.update(t, begin, end); });
    }
    hb::StepResult result;
    result.optimizer_ms = timer.lap();
    return result;
}

template <class T>
void ReferenceSessionOf<T>::read_state(float* const* tensors) {
    state_.read_state(tensors);
}

template <class T>
void ReferenceSessionOf<T>::read_gradients(float* const* gradients) {
    state_.read_gradients(gradients);
}

template <class T>
void ReferenceSessionOf<T>::read_input_gradient(float* gradient) {
    const std::vector<T>& g = network_.input_gradient();
    std::transform(g.begin(), g.end(), gradient, [](T x) { return static_cast<float>(x); });
}

template <class T>
uint64_t ReferenceSessionOf<T>::peak_memory_bytes() {
    return network_.allocated_bytes() + state_.bytes() +
           (staged_input_.size() + staged_target_.size()) * sizeof(T);
}

template <class T>
void ReferenceSessionOf<T>::set_profiling(bool enabled) {
    network_.event_log().set_enabled(enabled);
}

template <class T>
const std::vector<hb_event>& ReferenceSessionOf<T>::events() {
    return network_.event_log().events();
}

template <class T>
std::string ReferenceSessionOf<T>::manifest_json() {
    const std::string tile = std::to_string(Gemm<T>::MR) + "x" + std::to_string(Gemm<T>::NR);
    const std::string blocks = std::to_string(Gemm<T>::MC) + "x" + std::to_string(Gemm<T>::KC) +
                               "x" + std::to_string(Gemm<T>::NC);
    hb::JsonObject convolution;
    convolution.add_string("algorithm", "im2col + packed cache-blocked GEMM")
        .add_string("pointwise", "1x1 stride-1 convolutions multiply the input directly")
        .add("im2col_layers", network_.im2col_convolutions())
        .add("pointwise_layers", network_.pointwise_convolutions())
        .add_string("gemm_kernel", to_string(network_.tile_kernel()))
        .add_string("gemm_register_tile", tile)
        .add_string("gemm_blocks_mkn", blocks);
    hb::JsonObject m =
        hb::manifest(std::is_same_v<T, float> ? hb::Math::fp32 : hb::Math::fp64, threads());
    m.add_string("layout", "nchw")
        .add_string("placement", settings_.placement == HB_PLACEMENT_HOST ? "host" : "device")
        .add("convolution", convolution.str())
        .add_string("batchnorm", "batch statistics and reductions accumulated in double")
        .add("fusions", std::string("[]"))
        .add("workspace_bytes", network_.workspace_bytes())
        .add_bool("same_bits_for_any_thread_count", true);
    if (settings_.rounding.enabled())
        m.add_string("rounding", "random: seed " + std::to_string(settings_.rounding.seed) + ", " +
                                     std::to_string(settings_.rounding.bits) +
                                     " significand bits");
    return m.str();
}

template class ReferenceSessionOf<float>;
template class ReferenceSessionOf<double>;

}  // namespace reference
