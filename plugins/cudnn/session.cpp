#include "session.hpp"

#include "check.hpp"
#include "devices.hpp"
#include "events.hpp"
#include "kernel_math.hpp"
#include "kernels.hpp"
#include "math_mode.hpp"

#include <algorithm>
#include <vector>

namespace hb_cudnn {
namespace {

float elapsed(cudaEvent_t from, cudaEvent_t to) {
    float ms = 0;
    HB_CHECK(cudaEventElapsedTime(&ms, from, to));
    return ms;
}

// Ends a stream capture that an exception interrupted, so the stream stays usable.
class CaptureGuard {
public:
    explicit CaptureGuard(cudaStream_t s) : stream_(s) {}
    ~CaptureGuard() {
        if (!stream_) return;
        cudaGraph_t partial = nullptr;
        cudaStreamEndCapture(stream_, &partial);
        if (partial) cudaGraphDestroy(partial);
        cudaGetLastError();
    }
    cudaGraph_t end() {
        cudaGraph_t graph = nullptr;
        const cudaStream_t s = stream_;
        stream_ = nullptr;
        HB_CHECK(cudaStreamEndCapture(s, &graph));
        return graph;
    }

private:
    cudaStream_t stream_;
};

// Ends a step's profiling however the step ends, so that a step that threw leaves no operation
// expected of the calls that follow (set_batches converts batches through step_input).
class StepScope {
public:
    explicit StepScope(OperationTimes& times) : times_(times) {}
    ~StepScope() { times_.end_step(); }
    StepScope(const StepScope&) = delete;
    StepScope& operator=(const StepScope&) = delete;

private:
    OperationTimes& times_;
};

}  // namespace

Settings Session::checked_settings(const hb_session_desc& desc) {
    Settings s = parse_settings(desc);
    const std::string reason = device_unavailable_reason(s.device);
    if (!reason.empty())
        throw hb::Error(
            "device 'cuda:" + std::to_string(s.device) + "' is not available: " + reason,
            HB_UNAVAILABLE);
    return s;
}

Session::Session(const hb_session_desc& desc) : settings_(checked_settings(desc)) {
    ErrorContext context("session setup");
    HB_CHECK(cudaSetDevice(settings_.device));
    HB_CHECK(cudaFree(nullptr));  // creates the context before the memory baseline
    cudaDeviceProp p{};
    HB_CHECK(cudaGetDeviceProperties(&p, settings_.device));
    device_name_ = p.name;
    compute_capability_ = std::to_string(p.major) + "." + std::to_string(p.minor);
    const MathMode mode(settings_.math);
    if (p.major < mode.minimum_compute_capability())
        throw hb::Error(
            "option 'math': " + std::string(mode.name()) + " needs a GPU of compute capability " +
                std::to_string(mode.minimum_compute_capability()) + ".0 or later; " + device_name_ +
                " (cuda:" + std::to_string(settings_.device) + ") is " + compute_capability_,
            HB_UNSUPPORTED);
    stream_ = make_stream();
    size_t free_before = 0, free_after = 0, total = 0;
    HB_CHECK(cudaMemGetInfo(&free_before, &total));
    cudnn_ = make_cudnn();
    HB_CHECK(cudnnSetStream(cudnn_.get(), stream_.get()));
    HB_CHECK(cudaMemGetInfo(&free_after, &total));
    handle_bytes_ = free_before > free_after ? free_before - free_after : 0;

    step_ = std::make_unique<TrainingStep>(*desc.graph, settings_, cudnn_.get(), stream_.get());
    const Plan& plan = step_->plan();
    input_elements_ = plan.values()[size_t(plan.input())].shape.elements();
    target_elements_ = plan.target_shape().elements();
    start_ = make_event();
    forward_end_ = make_event();
    backward_end_ = make_event();
    update_start_ = make_event();
    end_ = make_event();
    losses_ = PinnedBuffer(size_t(std::max(plan.loss_count(), 1)) * sizeof(double));
    buffer_of_tensor_.assign(plan.tensors().size(), -1);
    const std::vector<int> order = step_->gradient_order();
    for (size_t i = 0; i < order.size(); ++i)
        buffer_of_tensor_[size_t(order[i])] = static_cast<int32_t>(i);
}

Session::~Session() {
    // Work still queued would outlive the buffers it uses.
    if (stream_) cudaStreamSynchronize(stream_.get());
}

// Everything of a step's first half after the batch is on the device: with host placement the
// batch's conversion to the step's layout and storage, then forward and backward, with the phase
// events in between.
void Session::enqueue_passes(int batch, const std::function<void(int tensor)>& final) {
    const cudaStream_t s = stream_.get();
    const void* input = nullptr;
    const float* target = nullptr;
    if (settings_.placement == HB_PLACEMENT_HOST) {
        input = step_input(staged_input_.floats(), layout_input_.floats(), storage_input_.get());
        target = staged_target_.floats();
        if (settings_.layout == Layout::nhwc) {
            step_->operation_times().run({-1, HB_PHASE_REORDER, op::nchw_to_nhwc}, [&] {
                kernels::nchw_to_nhwc(target, layout_target_.floats(), step_->plan().target_shape(),
                                      s);
            });
            target = layout_target_.floats();
        }
    } else if (settings_.cuda_graphs) {
        input = graph_input_.get();
        target = graph_target_.floats();
    } else {
        input = device_inputs_[size_t(batch)].get();
        target = device_targets_[size_t(batch)].floats();
    }
    step_->forward(input, target);
    record_event(forward_end_.get(), s);
    step_->backward(target, final);
    record_event(backward_end_.get(), s);
}

void Session::enqueue_update() {
    record_event(update_start_.get(), stream_.get());
    step_->optimize();
}

void Session::enqueue_step(int batch) {
    enqueue_passes(batch, {});
    enqueue_update();
}

void Session::enqueue_losses() {
    const size_t loss_bytes = size_t(step_->plan().loss_count()) * sizeof(double);
    if (loss_bytes)
        step_->operation_times().run({-1, HB_PHASE_TRANSFER, op::memcpy_device_to_host}, [&] {
            HB_CHECK(cudaMemcpyAsync(losses_.get(), step_->losses(), loss_bytes,
                                     cudaMemcpyDeviceToHost, stream_.get()));
        });
}

double Session::sum_losses() const {
    double loss = 0;
    const auto* losses = static_cast<const double*>(losses_.get());
    for (int i = 0; i < step_->plan().loss_count(); ++i) loss += losses[i];
    return loss;
}

GraphExec Session::capture(int batch) {
    ErrorContext context("CUDA graph capture");
    HB_CHECK(cudaStreamBeginCapture(stream_.get(), cudaStreamCaptureModeThreadLocal));
    CaptureGuard guard(stream_.get());
    enqueue_step(batch);
    Graph graph(guard.end());
    cudaGraphExec_t exec = nullptr;
    HB_CHECK(cudaGraphInstantiate(&exec, graph.get(), 0));
    return GraphExec(exec);
}

hb::StepResult Session::step(int32_t batch) {
    ErrorContext context("step");
    const cudaStream_t s = stream_.get();
    OperationTimes& times = step_->operation_times();
    StepScope scope(times);

    log_.begin_step();
    times.begin_step(log_.enabled());
    enqueue_batch(batch);
    if (settings_.cuda_graphs && eager_steps_ > 0) {
        // A profiled step replays its own graph, captured with the events of its operations; an
        // unprofiled one the graph without them, so it costs what it did before profiling.
        GraphExec& graph = times.active() ? profiled_captured_step_ : captured_step_;
        if (!graph)
            graph = capture(batch);  // the operations' marks are recorded as the graph's nodes
        else
            times.replay_graph();
        HB_CHECK(cudaGraphLaunch(graph.get(), s));
    } else {
        // With CUDA graphs, the first step runs eagerly: lazy initialisation inside cuDNN or the
        // kernels cannot happen while the stream is captured.
        enqueue_step(batch);
        ++eager_steps_;
    }
    record_event(end_.get(), s);
    enqueue_losses();
    HB_CHECK(cudaStreamSynchronize(s));
    times.finish(log_, track);

    hb::StepResult result;
    result.loss = sum_losses();
    result.forward_ms = elapsed(start_.get(), forward_end_.get());
    result.backward_ms = elapsed(forward_end_.get(), backward_end_.get());
    result.optimizer_ms = elapsed(update_start_.get(), end_.get());
    return result;
}

void Session::refuse_split(const char* call) const {
    if (settings_.cuda_graphs) throw hb::captured_step_refusal(call);
}

std::vector<hb_gradient_buffer> Session::gradient_buffers() {
    refuse_split("gradient_buffers");
    const Plan& plan = step_->plan();
    std::vector<hb_gradient_buffer> buffers;
    for (int t : step_->gradient_order()) {
        const TensorPlan& tensor = plan.tensors()[size_t(t)];
        buffers.push_back(
            {t, HB_MEMORY_DEVICE, step_->gradients() + tensor.offset, tensor.elements});
    }
    return buffers;
}

void* Session::gradient_stream() {
    return stream_.get();
}

hb::StepResult Session::forward_backward(int32_t batch, const hb::GradientReady& ready) {
    refuse_split("forward_backward");
    if (log_.enabled())
        throw hb::Error(
            "forward_backward: a profiled step's operations are held to the order of a whole "
            "step, which a split one does not follow; turn profiling off for data-parallel steps",
            HB_UNSUPPORTED);
    ErrorContext context("forward_backward");
    OperationTimes& times = step_->operation_times();
    StepScope scope(times);
    log_.begin_step();
    times.begin_step(false);
    enqueue_batch(batch);
    enqueue_passes(batch, [&](int tensor) { ready(buffer_of_tensor_[size_t(tensor)]); });
    enqueue_losses();
    HB_CHECK(cudaStreamSynchronize(stream_.get()));

    hb::StepResult result;
    result.loss = sum_losses();
    result.forward_ms = elapsed(start_.get(), forward_end_.get());
    result.backward_ms = elapsed(forward_end_.get(), backward_end_.get());
    return result;
}

hb::StepResult Session::apply_update() {
    ErrorContext context("apply_update");
    const cudaStream_t s = stream_.get();
    enqueue_update();
    record_event(end_.get(), s);
    HB_CHECK(cudaStreamSynchronize(s));
    hb::StepResult result;
    result.optimizer_ms = elapsed(update_start_.get(), end_.get());
    return result;
}

void Session::set_profiling(bool enabled) {
    ErrorContext context("set_profiling");
    // The pool of events is created once, before any profiled step can be captured.
    if (enabled) step_->prepare_profiling();
    log_.set_enabled(enabled);
}

const std::vector<hb_event>& Session::events() {
    return log_.events();
}

uint64_t Session::peak_memory_bytes() {
    // What the step holds (docs/results-schema.md): the library handle is reported apart.
    uint64_t bytes = step_->device_bytes();
    for (const auto& b : device_inputs_) bytes += b.bytes();
    for (const auto& b : device_targets_) bytes += b.bytes();
    for (const DeviceBuffer* b : {&staged_input_, &staged_target_, &layout_input_, &layout_target_,
                                  &storage_input_, &graph_input_, &graph_target_})
        bytes += b->bytes();
    return bytes;
}

}  // namespace hb_cudnn
