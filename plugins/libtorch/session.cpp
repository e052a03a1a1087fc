#include "session.hpp"

#include "devices.hpp"
#include "hb/cpu.hpp"
#include "hb/json.hpp"
#include "phase_events.hpp"

#include <ATen/Context.h>
#include <ATen/Functions.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>

#include <chrono>

namespace libtorch_backend {
namespace {

using Clock = std::chrono::steady_clock;

double milliseconds(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double, std::milli>(to - from).count();
}

// LibTorch's thread pools and cuDNN switches are process-wide; each backend run has its own
// worker process, so setting them per session is safe.
Settings configure_process(Settings s) {
    at::set_num_threads(s.threads);
    // The inter-op pool can be sized only once, before its first use; a second session in the
    // same process keeps the first one's size (the manifest reports what is in force).
    static const bool interop_sized = [&] {
        try {
            at::set_num_interop_threads(s.threads);
            return true;
        } catch (const c10::Error&) {
            return false;
        }
    }();
    (void)interop_sized;
    if (s.device.is_cuda()) {
        at::globalContext().setBenchmarkCuDNN(s.cudnn_benchmark);
        // cuDNN convolutions use TF32 by default in LibTorch; fp32 must switch it off.
        at::globalContext().setAllowTF32CuDNN(s.tf32);
        at::globalContext().setAllowTF32CuBLAS(s.tf32);
    }
    return s;
}

c10::MemoryFormat memory_format(const Settings& s) {
    return s.channels_last ? c10::MemoryFormat::ChannelsLast : c10::MemoryFormat::Contiguous;
}

at::Tensor host_view(const float* data, at::IntArrayRef shape) {
    return at::from_blob(const_cast<float*>(data), shape, at::TensorOptions().dtype(at::kFloat));
}

}  // namespace

TorchSession::TorchSession(const hb_session_desc& desc)
    : settings_(configure_process(parse_settings(desc))),
      format_(memory_format(settings_)),
      network_(*desc.graph, device_options(), format_),
      optimizer_(settings_.optimizer, network_.trainable_tensors(), network_.trainable_layers(),
                 settings_.foreach),
      profiler_(settings_.device) {
    if (settings_.device.is_cuda()) events_ = std::make_unique<PhaseEvents>(settings_.device);
    if (settings_.cuda_graphs) {
        captured_step_ = std::make_unique<CapturedStep>(settings_.device);
        static_input_ = at::empty(network_.input_shape(), device_options(), format_);
        static_target_ = at::empty(network_.target_shape(), device_options(), format_);
    }
}

at::TensorOptions TorchSession::device_options() const {
    return at::TensorOptions().dtype(settings_.dtype).device(settings_.device);
}

void TorchSession::load_state(const float* const* tensors) {
    at::NoGradGuard no_grad;
    for (int i = 0; i < network_.num_tensors(); ++i) {
        const TensorSpec& spec = network_.spec(i);
        // copy_ keeps the tensor's storage (a captured step graph reads it) and converts to its
        // memory format.
        at::Tensor t = network_.tensor(i);
        t.copy_(host_view(tensors[i], spec.shape));
    }
}

void TorchSession::load_optimizer_state(const float* const* square_averages) {
    optimizer_.load_square_averages(square_averages);
}

void TorchSession::set_batches(int32_t count, const float* const* inputs,
                               const float* const* targets) {
    inputs_.clear();
    targets_.clear();
    for (int32_t b = 0; b < count; ++b) {
        const at::Tensor input = host_view(inputs[b], network_.input_shape());
        const at::Tensor target = host_view(targets[b], network_.target_shape());
        if (settings_.placement == HB_PLACEMENT_HOST) {
            // Kept as a user's loader would hand them over: pageable host memory, NCHW.
            inputs_.push_back(input.clone());
            targets_.push_back(target.clone());
        } else {
            inputs_.push_back(input.to(settings_.device, settings_.dtype, false, true, format_));
            targets_.push_back(target.to(settings_.device, settings_.dtype, false, true, format_));
        }
    }
}

std::pair<at::Tensor, at::Tensor> TorchSession::stage(size_t b) const {
    if (settings_.placement == HB_PLACEMENT_DEVICE) return {inputs_[b], targets_[b]};
    return {inputs_[b].to(settings_.device, settings_.dtype, false, true, format_),
            targets_[b].to(settings_.device, settings_.dtype, false, true, format_)};
}

void TorchSession::clear_gradients(OpProfiler* profiler) {
    // As optimizer.zero_grad(set_to_none=True): the backward pass writes fresh gradients instead
    // of adding to zeroed ones. No operator runs, so a profile shows this as one operation.
    if (profiler) profiler->begin(profile::Part::zero_grad, -1, "zero_grad");
    for (int i = 0; i < network_.num_tensors(); ++i)
        if (network_.spec(i).trainable) network_.tensor(i).mutable_grad().reset();
    if (profiler) profiler->end();
}

at::Tensor TorchSession::train(const at::Tensor& input, const at::Tensor& target,
                               hb::StepResult* times, OpProfiler* profiler) {
    const auto start = Clock::now();
    clear_gradients(profiler);
    at::Tensor loss = network_.forward(input, target, profiler);
    const auto forward_end = Clock::now();
    if (events_) events_->record(PhaseEvents::forward_end);
    if (profiler) profiler->begin(profile::Part::backward);
    loss.backward();
    if (profiler) profiler->end();
    const auto backward_end = Clock::now();
    if (events_) events_->record(PhaseEvents::backward_end);
    optimizer_.step(profiler);
    if (events_) events_->record(PhaseEvents::end);
    if (times) {
        const auto end = Clock::now();
        times->forward_ms = milliseconds(start, forward_end);
        times->backward_ms = milliseconds(forward_end, backward_end);
        times->optimizer_ms = milliseconds(backward_end, end);
    }
    if (profiler) profiler->begin(profile::Part::loss);
    at::Tensor detached = loss.detach();
    if (profiler) profiler->end();
    return detached;
}

double TorchSession::graph_step(size_t b) {
    captured_step_->on_stream([&] {
        events_->record(PhaseEvents::start);
        static_input_.copy_(inputs_[b]);
        static_target_.copy_(targets_[b]);
        if (steps_ == 0) {
            // Eager warm-up where the capture will run: cuDNN's algorithm search, lazy
            // initialisation and the first allocations cannot be captured.
            static_loss_ = train(static_input_, static_target_, nullptr);
        } else if (!captured_step_->captured()) {
            captured_step_->capture(
                [&] { static_loss_ = train(static_input_, static_target_, nullptr); });
            captured_step_->replay();
        } else {
            captured_step_->replay();
        }
    });
    synchronize(settings_.device);
    return static_loss_.item<double>();
}

hb::StepResult TorchSession::step(int32_t batch) {
    const auto b = static_cast<size_t>(batch);

    // The steady state's memory: the latest step's peak, or the capture's when the step is a
    // replay, which allocates nothing (docs/results-schema.md).
    const bool replay = captured_step_ && captured_step_->captured();
    if (!replay) reset_peak_memory(settings_.device);
    hb::StepResult result;
    if (captured_step_) {
        result.loss = graph_step(b);
    } else {
        const bool cpu = settings_.device.is_cpu();
        OpProfiler::Step profiled(profiler_);
        OpProfiler* profiler = profiled.profiler();
        const auto start = Clock::now();
        if (events_) events_->record(PhaseEvents::start);
        if (profiler) profiler->begin(profile::Part::stage);
        const auto [input, target] = stage(b);
        if (profiler) profiler->end();
        const auto staged = Clock::now();
        const at::Tensor loss = train(input, target, cpu ? &result : nullptr, profiler);
        synchronize(settings_.device);
        if (profiler) profiler->begin(profile::Part::read_back);
        result.loss = loss.item<double>();
        if (profiler) profiler->end();
        if (cpu) result.forward_ms += milliseconds(start, staged);
        profiled.finish();
    }
    if (events_) events_->read(result);
    if (!replay) peak_memory_ = libtorch_backend::peak_memory_bytes(settings_.device);
    ++steps_;
    return result;
}

void TorchSession::read_state(float* const* tensors) {
    at::NoGradGuard no_grad;
    for (int i = 0; i < network_.num_tensors(); ++i) {
        const TensorSpec& spec = network_.spec(i);
        at::from_blob(tensors[i], spec.shape, at::TensorOptions().dtype(at::kFloat))
            .copy_(network_.tensor(i));
    }
}

void TorchSession::read_gradients(float* const* gradients) {
    at::NoGradGuard no_grad;
    for (int i = 0; i < network_.num_tensors(); ++i) {
        const TensorSpec& spec = network_.spec(i);
        if (!spec.trainable || !gradients[i]) continue;
        const at::Tensor& g = network_.tensor(i).grad();
        if (!g.defined())
            throw hb::Error("read_gradients: '" + spec.name +
                            "' has no gradient; run a step first");
        at::from_blob(gradients[i], spec.shape, at::TensorOptions().dtype(at::kFloat)).copy_(g);
    }
}

void TorchSession::set_profiling(bool enabled) {
    if (enabled && captured_step_)
        throw hb::Error(
            "profiling: a captured CUDA graph replays the whole step as one launch, so its "
            "operations cannot be timed one by one; set option 'cuda_graphs' to false to profile",
            HB_UNSUPPORTED);
    profiler_.set_enabled(enabled);
}

const std::vector<hb_event>& TorchSession::events() {
    return profiler_.events();
}

uint64_t TorchSession::peak_memory_bytes() {
    return steps_ > 0 ? peak_memory_ : libtorch_backend::peak_memory_bytes(settings_.device);
}

std::string TorchSession::manifest_json() {
    const bool cuda = settings_.device.is_cuda();
    const hb_optimizer& o = optimizer_.settings();
    std::string convolution;
    if (cuda)
        convolution = std::string("cuDNN through ATen, algorithms by ") +
                      (settings_.cudnn_benchmark ? "benchmark (cudnn_benchmark)" : "heuristics");
    else if (at::globalContext().hasMKLDNN() && at::globalContext().userEnabledMkldnn())
        convolution = "ATen's CPU convolution: oneDNN (MKL-DNN) where ATen picks it";
    else
        convolution = "ATen's native CPU convolution (no oneDNN in this build)";

    hb::JsonArray fusions;
    if (network_.inplace_relus() > 0)
        fusions.add_string("ReLU in place on its input (" +
                           std::to_string(network_.inplace_relus()) + " layers)");
    hb::JsonObject m;
    m.add_string("math", math_mode(settings_))
        .add("threads", at::get_num_threads())
        .add("interop_threads", at::get_num_interop_threads())
        .add_string("device", settings_.device.str())
        .add_string("device_description", cuda ? cuda_device_description(settings_.device.index())
                                               : hb::cpu_description())
        .add_string("libtorch", libtorch_version());
    if (built_with_cuda())
        m.add_string("cuda", cuda_version()).add_string("cudnn", cudnn_version());
    m.add_string("layout", settings_.channels_last ? "nhwc (channels_last)" : "nchw")
        .add_string("placement", settings_.placement == HB_PLACEMENT_HOST ? "host" : "device")
        .add_string("convolution", convolution);
    if (cuda) {
        m.add_bool("cudnn_benchmark", settings_.cudnn_benchmark)
            .add_bool("tf32", settings_.tf32)
            .add_bool("cuda_graphs", settings_.cuda_graphs);
        if (settings_.cuda_graphs)
            m.add_string("cuda_graph",
                         "first step eager, the whole step captured at the second and replayed "
                         "from then on; each step copies its batch into the graph's input first");
    }
    m.add_string("backward", "LibTorch autograd")
        .add_string(
            "optimizer",
            std::string("RMSProp (") + (o.variant == HB_RMSPROP_TORCH ? "torch" : "tensorflow") +
                " variant) as in-place tensor operations, " +
                (optimizer_.multi_tensor() ? "multi-tensor (_foreach_) over every parameter at once"
                                           : "one parameter at a time") +
                " (option foreach)")
        .add("fusions", fusions.str())
        .add_string("phase_times", cuda ? "CUDA events on the step's stream" : "host clock")
        .add("layers", network_.layers());
    return m.str();
}

}  // namespace libtorch_backend
