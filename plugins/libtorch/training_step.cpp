#include "training_step.hpp"

#include "devices.hpp"
#include "hb/phase_timer.hpp"
#include "split_step.hpp"

#include <ATen/Functions.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>

namespace hb_libtorch {
namespace {

c10::MemoryFormat memory_format(const Settings& s) {
    return s.channels_last ? c10::MemoryFormat::ChannelsLast : c10::MemoryFormat::Contiguous;
}

at::Tensor host_view(const float* data, at::IntArrayRef shape) {
    return at::from_blob(const_cast<float*>(data), shape, at::TensorOptions().dtype(at::kFloat));
}

}  // namespace

TrainingStep::TrainingStep(const hb_graph& graph, const Settings& settings)
    : settings_(settings),
      format_(memory_format(settings_)),
      network_(graph, device_options(), format_),
      optimizer_(settings_.optimizer, network_.trainable_tensors(), network_.trainable_layers(),
                 settings_.foreach) {
    if (settings_.device.is_cuda()) events_ = std::make_unique<PhaseEvents>(settings_.device);
    if (settings_.cuda_graphs) {
        captured_step_ = std::make_unique<CapturedStep>(settings_.device);
        static_input_ = at::empty(network_.input_shape(), device_options(), format_);
        static_target_ = at::empty(network_.target_shape(), device_options(), format_);
    }
    set_up_gradients();
}

TrainingStep::~TrainingStep() = default;

void TrainingStep::set_up_gradients() {
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

at::TensorOptions TrainingStep::device_options() const {
    return at::TensorOptions().dtype(settings_.dtype).device(settings_.device);
}

void TrainingStep::load_state(const float* const* tensors) {
    at::NoGradGuard no_grad;
    for (int i = 0; i < network_.num_tensors(); ++i) {
        // copy_ keeps the tensor's storage (a captured step graph reads it) and converts to its
        // memory format.
        at::Tensor t = network_.tensor(i);
        t.copy_(host_view(tensors[i], network_.spec(i).shape));
    }
}

void TrainingStep::read_state(float* const* tensors) const {
    at::NoGradGuard no_grad;
    for (int i = 0; i < network_.num_tensors(); ++i)
        at::from_blob(tensors[i], network_.spec(i).shape, at::TensorOptions().dtype(at::kFloat))
            .copy_(network_.tensor(i));
}

void TrainingStep::read_gradients(float* const* gradients) const {
    at::NoGradGuard no_grad;
    for (int i = 0; i < network_.num_tensors(); ++i) {
        const TensorSpec& spec = network_.spec(i);
        if (!spec.trainable || !gradients[i]) continue;
        const at::Tensor& g = network_.tensor(i).grad();
        at::from_blob(gradients[i], spec.shape, at::TensorOptions().dtype(at::kFloat)).copy_(g);
    }
}

void TrainingStep::read_input_gradient(float* gradient) const {
    at::NoGradGuard no_grad;
    synchronize(settings_.device);
    at::Tensor out =
        at::from_blob(gradient, network_.input_shape(), at::TensorOptions().dtype(at::kFloat));
    if (input_gradient_.defined())
        out.copy_(input_gradient_);
    else  // no layer that runs backward reads the input
        out.zero_();
}

void TrainingStep::set_batches(int32_t count, const float* const* inputs,
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

std::pair<at::Tensor, at::Tensor> TrainingStep::stage(size_t b) const {
    if (settings_.placement == HB_PLACEMENT_DEVICE) return {inputs_[b], targets_[b]};
    return {inputs_[b].to(settings_.device, settings_.dtype, false, true, format_),
            targets_[b].to(settings_.device, settings_.dtype, false, true, format_)};
}

void TrainingStep::clear_gradients(OpProfiler* profiler) {
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

at::Tensor TrainingStep::forward_backward(const at::Tensor& input, const at::Tensor& target,
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

void TrainingStep::update(hb::StepResult* times, OpProfiler* profiler) {
    hb::PhaseTimer timer;
    if (events_) events_->record(PhaseEvents::update_start);
    optimizer_.step(profiler);
    if (events_) events_->record(PhaseEvents::end);
    if (times) times->optimizer_ms = timer.lap();
}

at::Tensor TrainingStep::passes(size_t b, hb::StepResult& result, OpProfiler* profiler,
                                const hb::GradientReady* ready) {
    const bool cpu = settings_.device.is_cpu();
    hb::PhaseTimer timer;
    if (events_) events_->record(PhaseEvents::start);
    if (profiler) profiler->begin(profile::Part::stage);
    const auto [input, target] = stage(b);
    if (profiler) profiler->end();
    const double staging_ms = timer.lap();
    at::Tensor loss = forward_backward(input, target, cpu ? &result : nullptr, profiler, ready);
    if (cpu) result.forward_ms += staging_ms;
    return loss;
}

double TrainingStep::read_loss(const at::Tensor& loss, OpProfiler* profiler) {
    if (profiler) profiler->begin(profile::Part::read_back);
    const double value = loss.item<double>();
    if (profiler) profiler->end();
    return value;
}

double TrainingStep::captured_step(size_t b) {
    captured_step_->on_stream([&] {
        events_->record(PhaseEvents::start);
        static_input_.copy_(inputs_[b]);
        static_target_.copy_(targets_[b]);
        const auto train = [&] {
            static_loss_ =
                forward_backward(static_input_, static_target_, nullptr, nullptr, nullptr);
            update(nullptr, nullptr);
        };
        if (captured_calls_ == 0) {
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
    ++captured_calls_;
    return static_loss_.item<double>();
}

}  // namespace hb_libtorch
