#include "session.hpp"

#include "devices.hpp"
#include "hb/phase_timer.hpp"
#include "phase_events.hpp"
#include "split_step.hpp"

#include <ATen/Context.h>
#include <ATen/Functions.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <utility>

namespace libtorch_backend {
namespace {

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
    set_up_gradients();
}

TorchSession::~TorchSession() = default;

void TorchSession::set_up_gradients() {
    at::NoGradGuard no_grad;
    std::vector<int> order;
    for (int i = 0; i < network_.num_tensors(); ++i)
        if (network_.spec(i).trainable) order.push_back(i);
    // Autograd runs the nodes in the reverse order of their creation, so the parameters of later
    // layers are final first.
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return network_.spec(a).layer > network_.spec(b).layer; });
    readiness_ = std::make_unique<GradientReadiness>();
    for (int t : order) {
        const at::Tensor& p = network_.tensor(t);
        p.mutable_grad() = at::zeros_like(p);
        gradients_.push_back(p.grad());
        gradient_tensors_.push_back(t);
        readiness_->watch(p);
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
    // As optimizer.zero_grad(set_to_none=False): the gradients keep their storage, which the
    // gradient buffers point at, and the backward pass adds to them in place. A profile shows
    // this as one operation.
    if (profiler) profiler->begin(profile::Part::zero_grad, -1, "zero_grad");
    if (optimizer_.multi_tensor()) {
        at::_foreach_zero_(gradients_);
    } else {
        for (at::Tensor& g : gradients_) g.zero_();
    }
    if (profiler) profiler->end();
}

at::Tensor TorchSession::passes(const at::Tensor& input, const at::Tensor& target,
                                hb::StepResult* times, OpProfiler* profiler,
                                const hb::GradientReady* ready) {
    hb::PhaseTimer timer;
    clear_gradients(profiler);
    // The batch as a leaf of its own, when its gradient is wanted: the stored batch stays as is.
    const at::Tensor x = settings_.input_gradient ? input.detach().requires_grad_(true) : input;
    at::Tensor loss = network_.forward(x, target, profiler);
    const double forward_ms = timer.lap();
    if (events_) events_->record(PhaseEvents::forward_end);
    {
        const GradientReadiness::Listening listening(*readiness_, ready);
        if (profiler) profiler->begin(profile::Part::backward);
        loss.backward();
        if (profiler) profiler->end();
        const double backward_ms = timer.lap();
        if (events_) events_->record(PhaseEvents::backward_end);
        readiness_->tell_rest();
        if (settings_.input_gradient) input_gradient_ = x.grad();
        if (times) {
            times->forward_ms = forward_ms;
            times->backward_ms = backward_ms;
        }
    }
    if (profiler) profiler->begin(profile::Part::loss);
    at::Tensor detached = loss.detach();
    if (profiler) profiler->end();
    return detached;
}

void TorchSession::update(hb::StepResult* times, OpProfiler* profiler) {
    hb::PhaseTimer timer;
    if (events_) events_->record(PhaseEvents::update_start);
    optimizer_.step(profiler);
    if (events_) events_->record(PhaseEvents::end);
    if (times) times->optimizer_ms = timer.lap();
}

at::Tensor TorchSession::eager_passes(size_t b, hb::StepResult& result, OpProfiler* profiler,
                                      const hb::GradientReady* ready) {
    const bool cpu = settings_.device.is_cpu();
    hb::PhaseTimer timer;
    if (events_) events_->record(PhaseEvents::start);
    if (profiler) profiler->begin(profile::Part::stage);
    const auto [input, target] = stage(b);
    if (profiler) profiler->end();
    const double staging_ms = timer.lap();
    at::Tensor loss = passes(input, target, cpu ? &result : nullptr, profiler, ready);
    if (cpu) result.forward_ms += staging_ms;
    return loss;
}

double TorchSession::read_loss(const at::Tensor& loss, OpProfiler* profiler) {
    if (profiler) profiler->begin(profile::Part::read_back);
    const double value = loss.item<double>();
    if (profiler) profiler->end();
    return value;
}

double TorchSession::graph_step(size_t b) {
    captured_step_->on_stream([&] {
        events_->record(PhaseEvents::start);
        static_input_.copy_(inputs_[b]);
        static_target_.copy_(targets_[b]);
        const auto train = [&] {
            static_loss_ = passes(static_input_, static_target_, nullptr, nullptr, nullptr);
            update(nullptr, nullptr);
        };
        if (steps_ == 0) {
            // Eager warm-up where the capture will run: cuDNN's algorithm search, lazy
            // initialisation and the first allocations cannot be captured.
            train();
        } else if (!captured_step_->captured()) {
            captured_step_->capture(train);
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
    split_profile_.reset();

    // The steady state's memory: the latest step's peak, or the capture's when the step is a
    // replay, which allocates nothing (docs/results-schema.md).
    const bool replay = captured_step_ && captured_step_->captured();
    if (!replay) reset_peak_memory(settings_.device);
    hb::StepResult result;
    if (captured_step_) {
        result.loss = graph_step(b);
    } else {
        OpProfiler::Step profiled(profiler_);
        OpProfiler* profiler = profiled.profiler();
        const at::Tensor loss = eager_passes(b, result, profiler, nullptr);
        update(settings_.device.is_cpu() ? &result : nullptr, profiler);
        synchronize(settings_.device);
        result.loss = read_loss(loss, profiler);
        profiled.finish();
    }
    if (events_) {
        events_->read_passes(result);
        events_->read_update(result);
    }
    if (!replay) peak_memory_ = libtorch_backend::peak_memory_bytes(settings_.device);
    ++steps_;
    return result;
}

void TorchSession::refuse_split(const char* call) const {
    if (captured_step_) throw hb::captured_step_refusal(call);
    if (settings_.dtype != at::kFloat)
        throw hb::Error(std::string(call) +
                            ": precision fp64 keeps float64 gradients, and gradient buffers hold "
                            "float32; use fp32 for data-parallel steps",
                        HB_UNSUPPORTED);
}

std::vector<hb_gradient_buffer> TorchSession::gradient_buffers() {
    refuse_split("gradient_buffers");
    const hb_memory memory = settings_.device.is_cuda() ? HB_MEMORY_DEVICE : HB_MEMORY_HOST;
    std::vector<hb_gradient_buffer> buffers;
    for (size_t i = 0; i < gradients_.size(); ++i) {
        const at::Tensor& g = gradients_[i];
        if (!g.is_non_overlapping_and_dense())
            throw hb::Error("gradient_buffers: the gradient of '" +
                            network_.spec(gradient_tensors_[i]).name + "' is not dense");
        buffers.push_back({gradient_tensors_[i], memory, g.data_ptr<float>(), g.numel()});
    }
    return buffers;
}

void* TorchSession::gradient_stream() {
    return settings_.device.is_cuda() ? current_stream(settings_.device) : nullptr;
}

hb::StepResult TorchSession::forward_backward(int32_t batch, const hb::GradientReady& ready) {
    refuse_split("forward_backward");
    split_profile_.reset();
    reset_peak_memory(settings_.device);
    split_profile_ = std::make_unique<OpProfiler::Step>(profiler_);
    OpProfiler* profiler = split_profile_->profiler();
    hb::StepResult result;
    try {
        const at::Tensor loss = eager_passes(static_cast<size_t>(batch), result, profiler, &ready);
        // Reading the loss waits for the step's stream only, not for work the listener gave
        // other streams.
        result.loss = read_loss(loss, profiler);
    } catch (...) {
        split_profile_.reset();
        throw;
    }
    if (events_) events_->read_passes(result);
    return result;
}

hb::StepResult TorchSession::apply_update() {
    hb::StepResult result;
    try {
        update(settings_.device.is_cpu() ? &result : nullptr,
               split_profile_ ? split_profile_->profiler() : nullptr);
        synchronize(settings_.device);
        if (split_profile_) split_profile_->finish();
    } catch (...) {
        split_profile_.reset();
        throw;
    }
    split_profile_.reset();
    if (events_) events_->read_update(result);
    peak_memory_ = libtorch_backend::peak_memory_bytes(settings_.device);
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
        at::from_blob(gradients[i], spec.shape, at::TensorOptions().dtype(at::kFloat)).copy_(g);
    }
}

void TorchSession::read_input_gradient(float* gradient) {
    at::NoGradGuard no_grad;
    synchronize(settings_.device);
    at::Tensor out =
        at::from_blob(gradient, network_.input_shape(), at::TensorOptions().dtype(at::kFloat));
    if (input_gradient_.defined())
        out.copy_(input_gradient_);
    else  // no layer that runs backward reads the input
        out.zero_();
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

}  // namespace libtorch_backend
