#include "session.hpp"

#include "devices.hpp"
#include "hb/phase_timer.hpp"

#include <ATen/Context.h>
#include <ATen/Functions.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <utility>

namespace hb_libtorch {
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

}  // namespace

Session::Session(const hb_session_desc& desc)
    : settings_(configure_process(parse_settings(desc))),
      step_(*desc.graph, settings_),
      profiler_(settings_.device) {}

void Session::load_state(const float* const* tensors) {
    step_.load_state(tensors);
}

void Session::load_optimizer_state(const float* const* square_averages) {
    step_.optimizer().load_square_averages(square_averages);
}

void Session::set_batches(int32_t count, const float* const* inputs, const float* const* targets) {
    step_.set_batches(count, inputs, targets);
}

hb::StepResult Session::step(int32_t batch) {
    const auto b = static_cast<size_t>(batch);
    split_profile_.reset();

    // The steady state's memory: the latest step's peak, or the capture's when the step is a
    // replay, which allocates nothing (docs/results-schema.md).
    const bool replay = step_.replaying();
    if (!replay) reset_peak_memory(settings_.device);
    hb::StepResult result;
    if (step_.capturing()) {
        result.loss = step_.captured_step(b);
    } else {
        OpProfiler::Step profiled(profiler_);
        OpProfiler* profiler = profiled.profiler();
        const at::Tensor loss = step_.passes(b, result, profiler, nullptr);
        step_.update(settings_.device.is_cpu() ? &result : nullptr, profiler);
        synchronize(settings_.device);
        result.loss = step_.read_loss(loss, profiler);
        profiled.finish();
    }
    if (PhaseEvents* events = step_.events()) {
        events->read_passes(result);
        events->read_update(result);
    }
    if (!replay) peak_memory_ = hb_libtorch::peak_memory_bytes(settings_.device);
    ++steps_;
    return result;
}

void Session::refuse_split(const char* call) const {
    if (step_.capturing()) throw hb::captured_step_refusal(call);
    if (settings_.dtype != at::kFloat)
        throw hb::Error(std::string(call) +
                            ": math fp64 keeps float64 gradients, and gradient buffers hold "
                            "float32; use fp32 for data-parallel steps",
                        HB_UNSUPPORTED);
}

std::vector<hb_gradient_buffer> Session::gradient_buffers() {
    refuse_split("gradient_buffers");
    const hb_memory memory = settings_.device.is_cuda() ? HB_MEMORY_DEVICE : HB_MEMORY_HOST;
    std::vector<hb_gradient_buffer> buffers;
    const std::vector<at::Tensor>& gradients = step_.gradients();
    const std::vector<int>& tensors = step_.gradient_tensors();
    for (size_t i = 0; i < gradients.size(); ++i) {
        const at::Tensor& g = gradients[i];
        if (!g.is_non_overlapping_and_dense())
            throw hb::Error("gradient_buffers: the gradient of '" +
                            step_.network().spec(tensors[i]).name + "' is not dense");
        buffers.push_back({tensors[i], memory, g.data_ptr<float>(), g.numel()});
    }
    return buffers;
}

void* Session::gradient_stream() {
    return settings_.device.is_cuda() ? current_stream(settings_.device) : nullptr;
}

hb::StepResult Session::forward_backward(int32_t batch, const hb::GradientReady& ready) {
    refuse_split("forward_backward");
    split_profile_.reset();
    reset_peak_memory(settings_.device);
    split_profile_ = std::make_unique<OpProfiler::Step>(profiler_);
    OpProfiler* profiler = split_profile_->profiler();
    hb::StepResult result;
    try {
        const at::Tensor loss = step_.passes(static_cast<size_t>(batch), result, profiler, &ready);
        // Reading the loss waits for the step's stream only, not for work the listener gave
        // other streams.
        result.loss = step_.read_loss(loss, profiler);
    } catch (...) {
        split_profile_.reset();
        throw;
    }
    if (PhaseEvents* events = step_.events()) events->read_passes(result);
    return result;
}

hb::StepResult Session::apply_update() {
    hb::StepResult result;
    try {
        step_.update(settings_.device.is_cpu() ? &result : nullptr,
                     split_profile_ ? split_profile_->profiler() : nullptr);
        synchronize(settings_.device);
        if (split_profile_) split_profile_->finish();
    } catch (...) {
        split_profile_.reset();
        throw;
    }
    split_profile_.reset();
    if (PhaseEvents* events = step_.events()) events->read_update(result);
    peak_memory_ = hb_libtorch::peak_memory_bytes(settings_.device);
    ++steps_;
    return result;
}

void Session::read_state(float* const* tensors) {
    step_.read_state(tensors);
}

void Session::read_gradients(float* const* gradients) {
    step_.read_gradients(gradients);
}

void Session::read_input_gradient(float* gradient) {
    step_.read_input_gradient(gradient);
}

void Session::set_profiling(bool enabled) {
    if (enabled && step_.capturing())
        throw hb::Error(
            "profiling: a captured CUDA graph replays the whole step as one launch, so its "
            "operations cannot be timed one by one; set option 'cuda_graphs' to false to profile",
            HB_UNSUPPORTED);
    profiler_.set_enabled(enabled);
}

const std::vector<hb_event>& Session::events() {
    return profiler_.events();
}

uint64_t Session::peak_memory_bytes() {
    return steps_ > 0 ? peak_memory_ : hb_libtorch::peak_memory_bytes(settings_.device);
}

}  // namespace hb_libtorch
