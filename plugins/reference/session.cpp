#include "session.hpp"

#include "hb/json.hpp"
#include "hb/manifest.hpp"
#include "hb/phase_timer.hpp"

#include <algorithm>
#include <type_traits>

namespace reference {
namespace {

template <class From, class To>
void convert(const From* from, size_t n, To* to) {
    std::transform(from, from + n, to, [](From x) { return static_cast<To>(x); });
}

}  // namespace

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
    : settings_(settings), pool_(settings_.threads), network_(*desc.graph, pool_, settings_.kernel) {
    network_.set_input_gradient(hb::wants_input_gradient(desc));
    network_.set_random_rounding(settings_.rounding);
    for (int i = 0; i < network_.num_tensors(); ++i) {
        const TensorInfo& t = network_.tensor_info(i);
        optimizer_state_.push_back(t.trainable
                                       ? make_rmsprop_state<T>(settings_.optimizer, t.elements)
                                       : RmsPropState<T>{});
    }
}

template <class T>
void ReferenceSessionOf<T>::load_state(const float* const* tensors) {
    for (int i = 0; i < network_.num_tensors(); ++i) {
        std::vector<T>& t = network_.tensor(i);
        convert(tensors[i], t.size(), t.data());
    }
}

template <class T>
void ReferenceSessionOf<T>::load_optimizer_state(const float* const* square_averages) {
    size_t k = 0;
    for (int i = 0; i < network_.num_tensors(); ++i) {
        if (!network_.tensor_info(i).trainable) continue;
        const float* source = square_averages[k++];
        std::vector<T>& v = optimizer_state_[i].square_average;
        convert(source, v.size(), v.data());
    }
}

template <class T>
void ReferenceSessionOf<T>::set_batches(int32_t count, const float* const* inputs,
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

template <class T>
std::vector<hb_gradient_buffer> ReferenceSessionOf<T>::gradient_buffers() {
    std::vector<hb_gradient_buffer> buffers;
    if constexpr (std::is_same_v<T, float>) {
        for (int t : network_.gradient_order()) {
            std::vector<float>& g = network_.gradient(t);
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
    const auto b = static_cast<size_t>(batch);
    hb::EventLog& events = network_.event_log();
    events.begin_step();

    hb::PhaseTimer timer;
    const T* input = inputs_[b].data();
    const T* target = targets_[b].data();
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
    result.forward_ms = timer.lap();
    network_.backward(ready);
    result.backward_ms = timer.lap();
    return result;
}

template <class T>
hb::StepResult ReferenceSessionOf<T>::apply_update() {
    hb::PhaseTimer timer;
    for (int i = 0; i < network_.num_tensors(); ++i) {
        const TensorInfo& info = network_.tensor_info(i);
        if (!info.trainable) continue;
        const hb::EventLog::Scope event(network_.event_log(), "rmsprop_update", info.layer,
                                        HB_PHASE_UPDATE);
        std::vector<T>& p = network_.tensor(i);
        rmsprop_update(pool_, settings_.optimizer, static_cast<int64_t>(p.size()), p.data(),
                       network_.gradient(i).data(), optimizer_state_[i]);
    }
    hb::StepResult result;
    result.optimizer_ms = timer.lap();
    return result;
}

template <class T>
void ReferenceSessionOf<T>::read_state(float* const* tensors) {
    for (int i = 0; i < network_.num_tensors(); ++i) {
        const std::vector<T>& t = network_.tensor(i);
        convert(t.data(), t.size(), tensors[i]);
    }
}

template <class T>
void ReferenceSessionOf<T>::read_gradients(float* const* gradients) {
    for (int i = 0; i < network_.num_tensors(); ++i) {
        if (!network_.tensor_info(i).trainable || !gradients[i]) continue;
        const std::vector<T>& g = network_.gradient(i);
        convert(g.data(), g.size(), gradients[i]);
    }
}

template <class T>
void ReferenceSessionOf<T>::read_input_gradient(float* gradient) {
    const std::vector<T>& g = network_.input_gradient();
    convert(g.data(), g.size(), gradient);
}

template <class T>
uint64_t ReferenceSessionOf<T>::peak_memory_bytes() {
    uint64_t elements = staged_input_.size() + staged_target_.size();
    for (const auto& s : optimizer_state_)
        elements += s.square_average.size() + s.momentum_buffer.size();
    for (const auto& b : inputs_) elements += b.size();
    for (const auto& b : targets_) elements += b.size();
    return network_.allocated_bytes() + elements * sizeof(T);
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
