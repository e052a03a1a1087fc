#include "session.hpp"

#include "check.hpp"
#include "devices.hpp"
#include "events.hpp"
#include "kernel_math.hpp"
#include "kernels.hpp"
#include "math_mode.hpp"

#include <algorithm>
#include <vector>

namespace cudnn_backend {
namespace {

// OIHW <-> OHWI (cuDNN's NHWC filter format) for a conv weight; other tensors are unchanged.
void oihw_to_ohwi(const float* in, float* out, const int64_t* s) {
    const int64_t o = s[0], c = s[1], h = s[2], w = s[3];
    for (int64_t a = 0; a < o; ++a)
        for (int64_t i = 0; i < c; ++i)
            for (int64_t y = 0; y < h; ++y)
                for (int64_t x = 0; x < w; ++x)
                    out[((a * h + y) * w + x) * c + i] = in[((a * c + i) * h + y) * w + x];
}
void ohwi_to_oihw(const float* in, float* out, const int64_t* s) {
    const int64_t o = s[0], c = s[1], h = s[2], w = s[3];
    for (int64_t a = 0; a < o; ++a)
        for (int64_t i = 0; i < c; ++i)
            for (int64_t y = 0; y < h; ++y)
                for (int64_t x = 0; x < w; ++x)
                    out[((a * c + i) * h + y) * w + x] = in[((a * h + y) * w + x) * c + i];
}

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

Settings CudnnSession::checked_settings(const hb_session_desc& desc) {
    Settings s = parse_settings(desc);
    const std::string reason = device_unavailable_reason(s.device);
    if (!reason.empty())
        throw hb::Error(
            "device 'cuda:" + std::to_string(s.device) + "' is not available: " + reason,
            HB_UNAVAILABLE);
    return s;
}

CudnnSession::CudnnSession(const hb_session_desc& desc) : settings_(checked_settings(desc)) {
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

CudnnSession::~CudnnSession() {
    // Work still queued would outlive the buffers it uses.
    if (stream_) cudaStreamSynchronize(stream_.get());
}

// Every transfer goes through the session's stream, and waits for it: that stream is
// non-blocking, so it would not wait for cudaMemcpy's legacy default stream, and the step's work
// queued on it after an upload must read the uploaded data.
void CudnnSession::copy(void* destination, const void* source, size_t bytes, cudaMemcpyKind kind) {
    HB_CHECK(cudaMemcpyAsync(destination, source, bytes, kind, stream_.get()));
    HB_CHECK(cudaStreamSynchronize(stream_.get()));
}

void CudnnSession::upload_tensor(int t, const float* host, float* block) {
    const TensorPlan& tensor = step_->plan().tensors()[size_t(t)];
    const size_t bytes = size_t(tensor.elements) * sizeof(float);
    float* device = block + tensor.offset;
    if (settings_.layout == Layout::nhwc && tensor.rank == 4) {
        std::vector<float> converted(size_t(tensor.elements));
        oihw_to_ohwi(host, converted.data(), tensor.shape);
        copy(device, converted.data(), bytes, cudaMemcpyHostToDevice);
    } else {
        copy(device, host, bytes, cudaMemcpyHostToDevice);
    }
}

void CudnnSession::download_tensor(int t, const float* block, float* host) {
    const TensorPlan& tensor = step_->plan().tensors()[size_t(t)];
    download(block + tensor.offset, tensor.elements, Storage::f32,
             tensor.rank == 4 ? tensor.shape : nullptr, host);
}

void CudnnSession::download(const void* device, int64_t elements, Storage storage,
                            const int64_t* dims, float* host) {
    const bool reorder = settings_.layout == Layout::nhwc && dims;
    std::vector<float> converted(reorder ? size_t(elements) : 0);
    float* out = reorder ? converted.data() : host;
    if (storage == Storage::bf16) {
        std::vector<math::bf16> stored(static_cast<size_t>(elements));
        copy(stored.data(), device, stored.size() * sizeof(math::bf16), cudaMemcpyDeviceToHost);
        std::transform(stored.begin(), stored.end(), out, math::from_bf16);
    } else {
        copy(out, device, size_t(elements) * sizeof(float), cudaMemcpyDeviceToHost);
    }
    if (reorder) ohwi_to_oihw(converted.data(), host, dims);
}

void CudnnSession::load_state(const float* const* tensors) {
    ErrorContext context("load_state");
    HB_CHECK(cudaStreamSynchronize(stream_.get()));
    const auto& plan = step_->plan();
    for (size_t i = 0; i < plan.tensors().size(); ++i) {
        const TensorPlan& t = plan.tensors()[i];
        upload_tensor(int(i), tensors[i], t.trainable ? step_->parameters() : step_->statistics());
    }
    step_->parameters_changed();
    HB_CHECK(cudaStreamSynchronize(stream_.get()));
}

void CudnnSession::load_optimizer_state(const float* const* square_averages) {
    ErrorContext context("load_optimizer_state");
    HB_CHECK(cudaStreamSynchronize(stream_.get()));
    const auto& plan = step_->plan();
    size_t k = 0;
    for (size_t i = 0; i < plan.tensors().size(); ++i) {
        const TensorPlan& t = plan.tensors()[i];
        if (!t.trainable) continue;
        upload_tensor(int(i), square_averages[k++], step_->square_averages());
    }
}

void CudnnSession::set_batches(int32_t count, const float* const* inputs,
                               const float* const* targets) {
    ErrorContext context("set_batches");
    HB_CHECK(cudaStreamSynchronize(stream_.get()));
    graph_.reset();
    profiled_graph_.reset();
    host_inputs_.clear();
    host_targets_.clear();
    device_inputs_.clear();
    device_targets_.clear();
    const size_t input_bytes = size_t(input_elements_) * sizeof(float);
    const size_t target_bytes = size_t(target_elements_) * sizeof(float);
    const bool nhwc = settings_.layout == Layout::nhwc;
    const Storage storage = MathMode(settings_.math).storage();
    const bool bf16 = storage == Storage::bf16;
    const size_t step_input_bytes = size_t(input_elements_ * element_bytes(storage));
    const Plan& plan = step_->plan();
    if (settings_.placement == HB_PLACEMENT_HOST) {
        // The step copies from this (pageable) memory each time, as a data loader's batch would.
        for (int32_t b = 0; b < count; ++b) {
            host_inputs_.emplace_back(inputs[b], inputs[b] + input_elements_);
            host_targets_.emplace_back(targets[b], targets[b] + target_elements_);
        }
        staged_input_ = DeviceBuffer(input_bytes);
        staged_target_ = DeviceBuffer(target_bytes);
        if (nhwc) {
            layout_input_ = DeviceBuffer(input_bytes);
            layout_target_ = DeviceBuffer(target_bytes);
        }
        if (bf16) storage_input_ = DeviceBuffer(step_input_bytes);
        return;
    }
    if (settings_.cuda_graphs) {
        // One graph serves every batch: each step copies its batch here first.
        graph_input_ = DeviceBuffer(step_input_bytes);
        graph_target_ = DeviceBuffer(target_bytes);
    }
    // Device placement: each batch is converted to the step's form once, here.
    DeviceBuffer upload_input, upload_target, layout_scratch;
    if (nhwc || bf16) upload_input = DeviceBuffer(input_bytes);
    if (nhwc) upload_target = DeviceBuffer(target_bytes);
    if (nhwc && bf16) layout_scratch = DeviceBuffer(input_bytes);
    for (int32_t b = 0; b < count; ++b) {
        device_inputs_.emplace_back(step_input_bytes);
        device_targets_.emplace_back(target_bytes);
        DeviceBuffer& input = device_inputs_.back();
        DeviceBuffer& target = device_targets_.back();
        if (!nhwc && !bf16) {
            copy(input.get(), inputs[b], input_bytes, cudaMemcpyHostToDevice);
        } else {
            copy(upload_input.get(), inputs[b], input_bytes, cudaMemcpyHostToDevice);
            step_input(upload_input.floats(), bf16 ? layout_scratch.floats() : input.floats(),
                       input.get());
        }
        if (!nhwc) {
            copy(target.get(), targets[b], target_bytes, cudaMemcpyHostToDevice);
        } else {
            copy(upload_target.get(), targets[b], target_bytes, cudaMemcpyHostToDevice);
            kernels::nchw_to_nhwc(upload_target.floats(), target.floats(), plan.target_shape(),
                                  stream_.get());
        }
        HB_CHECK(cudaStreamSynchronize(stream_.get()));
    }
}

const void* CudnnSession::step_input(const float* nchw, float* layout, void* storage) {
    const cudaStream_t s = stream_.get();
    const Plan& plan = step_->plan();
    OperationTimes& times = step_->operation_times();
    const float* input = nchw;
    if (settings_.layout == Layout::nhwc) {
        times.run({-1, HB_PHASE_REORDER, op::nchw_to_nhwc}, [&] {
            kernels::nchw_to_nhwc(input, layout, plan.values()[size_t(plan.input())].shape, s);
        });
        input = layout;
    }
    if (MathMode(settings_.math).storage() != Storage::bf16) return input;
    times.run({-1, HB_PHASE_REORDER, op::to_bf16},
              [&] { kernels::to_bf16(input, storage, input_elements_, s); });
    return storage;
}

void CudnnSession::enqueue_batch(int batch) {
    const cudaStream_t s = stream_.get();
    OperationTimes& times = step_->operation_times();
    record_event(start_.get(), s);
    // The batch goes into fixed buffers (from host memory, or between device buffers for a
    // graph), so one graph serves every batch.
    if (settings_.placement == HB_PLACEMENT_HOST) {
        times.run({-1, HB_PHASE_TRANSFER, op::memcpy_host_to_device}, [&] {
            HB_CHECK(cudaMemcpyAsync(staged_input_.get(), host_inputs_[size_t(batch)].data(),
                                     staged_input_.bytes(), cudaMemcpyHostToDevice, s));
        });
        times.run({-1, HB_PHASE_TRANSFER, op::memcpy_host_to_device}, [&] {
            HB_CHECK(cudaMemcpyAsync(staged_target_.get(), host_targets_[size_t(batch)].data(),
                                     staged_target_.bytes(), cudaMemcpyHostToDevice, s));
        });
    } else if (settings_.cuda_graphs) {
        times.run({-1, HB_PHASE_REORDER, op::memcpy_device_to_device}, [&] {
            HB_CHECK(cudaMemcpyAsync(graph_input_.get(), device_inputs_[size_t(batch)].get(),
                                     graph_input_.bytes(), cudaMemcpyDeviceToDevice, s));
        });
        times.run({-1, HB_PHASE_REORDER, op::memcpy_device_to_device}, [&] {
            HB_CHECK(cudaMemcpyAsync(graph_target_.get(), device_targets_[size_t(batch)].get(),
                                     graph_target_.bytes(), cudaMemcpyDeviceToDevice, s));
        });
    }
}

// Everything of a step's first half after the batch is on the device: with host placement the
// batch's conversion to the step's layout and storage, then forward and backward, with the phase
// events in between.
void CudnnSession::enqueue_passes(int batch, const std::function<void(int tensor)>& final) {
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

void CudnnSession::enqueue_update() {
    record_event(update_start_.get(), stream_.get());
    step_->optimize();
}

void CudnnSession::enqueue_step(int batch) {
    enqueue_passes(batch, {});
    enqueue_update();
}

void CudnnSession::enqueue_losses() {
    const size_t loss_bytes = size_t(step_->plan().loss_count()) * sizeof(double);
    if (loss_bytes)
        step_->operation_times().run({-1, HB_PHASE_TRANSFER, op::memcpy_device_to_host}, [&] {
            HB_CHECK(cudaMemcpyAsync(losses_.get(), step_->losses(), loss_bytes,
                                     cudaMemcpyDeviceToHost, stream_.get()));
        });
}

double CudnnSession::sum_losses() const {
    double loss = 0;
    const auto* losses = static_cast<const double*>(losses_.get());
    for (int i = 0; i < step_->plan().loss_count(); ++i) loss += losses[i];
    return loss;
}

GraphExec CudnnSession::capture(int batch) {
    ErrorContext context("CUDA graph capture");
    HB_CHECK(cudaStreamBeginCapture(stream_.get(), cudaStreamCaptureModeThreadLocal));
    CaptureGuard guard(stream_.get());
    enqueue_step(batch);
    Graph graph(guard.end());
    cudaGraphExec_t exec = nullptr;
    HB_CHECK(cudaGraphInstantiate(&exec, graph.get(), 0));
    return GraphExec(exec);
}

hb::StepResult CudnnSession::step(int32_t batch) {
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
        GraphExec& graph = times.active() ? profiled_graph_ : graph_;
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

void CudnnSession::refuse_split(const char* call) const {
    if (settings_.cuda_graphs) throw hb::captured_step_refusal(call);
}

std::vector<hb_gradient_buffer> CudnnSession::gradient_buffers() {
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

void* CudnnSession::gradient_stream() {
    return stream_.get();
}

hb::StepResult CudnnSession::forward_backward(int32_t batch, const hb::GradientReady& ready) {
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

hb::StepResult CudnnSession::apply_update() {
    ErrorContext context("apply_update");
    const cudaStream_t s = stream_.get();
    enqueue_update();
    record_event(end_.get(), s);
    HB_CHECK(cudaStreamSynchronize(s));
    hb::StepResult result;
    result.optimizer_ms = elapsed(update_start_.get(), end_.get());
    return result;
}

void CudnnSession::set_profiling(bool enabled) {
    ErrorContext context("set_profiling");
    // The pool of events is created once, before any profiled step can be captured.
    if (enabled) step_->prepare_profiling();
    log_.set_enabled(enabled);
}

const std::vector<hb_event>& CudnnSession::events() {
    return log_.events();
}

void CudnnSession::read_state(float* const* tensors) {
    ErrorContext context("read_state");
    HB_CHECK(cudaStreamSynchronize(stream_.get()));
    const auto& plan = step_->plan();
    for (size_t i = 0; i < plan.tensors().size(); ++i) {
        const TensorPlan& t = plan.tensors()[i];
        download_tensor(int(i), t.trainable ? step_->parameters() : step_->statistics(),
                        tensors[i]);
    }
}

void CudnnSession::read_gradients(float* const* gradients) {
    ErrorContext context("read_gradients");
    HB_CHECK(cudaStreamSynchronize(stream_.get()));
    const auto& plan = step_->plan();
    for (size_t i = 0; i < plan.tensors().size(); ++i) {
        if (!plan.tensors()[i].trainable || !gradients[i]) continue;
        download_tensor(int(i), step_->gradients(), gradients[i]);
    }
}

void CudnnSession::read_input_gradient(float* gradient) {
    ErrorContext context("read_input_gradient");
    const Plan& plan = step_->plan();
    const Shape shape = plan.values()[size_t(plan.input())].shape;
    const void* device = step_->input_gradient();
    if (!device) {  // no layer that runs backward reads the input
        std::fill(gradient, gradient + shape.elements(), 0.0f);
        return;
    }
    HB_CHECK(cudaStreamSynchronize(stream_.get()));
    const int64_t dims[4] = {shape.n, shape.c, shape.h, shape.w};
    download(device, shape.elements(), plan.storage(), dims, gradient);
}

uint64_t CudnnSession::peak_memory_bytes() {
    // What the step holds (docs/results-schema.md): the library handle is reported apart.
    uint64_t bytes = step_->device_bytes();
    for (const auto& b : device_inputs_) bytes += b.bytes();
    for (const auto& b : device_targets_) bytes += b.bytes();
    for (const DeviceBuffer* b : {&staged_input_, &staged_target_, &layout_input_, &layout_target_,
                                  &storage_input_, &graph_input_, &graph_target_})
        bytes += b->bytes();
    return bytes;
}

std::string CudnnSession::manifest_json() {
    const MathMode mode(settings_.math);
    hb::JsonArray own_kernels;
    for (const char* k : {"relu", "maxpool2d", "upsample", "add", "mse_loss", "rmsprop"})
        own_kernels.add_string(k);
    if (mode.own_channel_kernels())
        for (const char* k : {"batchnorm", "conv_bias"}) own_kernels.add_string(k);
    if (mode.converts_weights()) own_kernels.add_string("bf16_conversion");
    hb::JsonObject m = hb::manifest(sdk_math(settings_.math), 1);
    m.add_string("layout", to_string(settings_.layout))
        .add_string("convolution_api",
                    settings_.convolutions == ConvolutionApi::graph
                        ? "graph (engines by cuDNN's heuristics, the first " +
                              std::to_string(GraphConvolutionSearch::candidates_timed) +
                              " admitted timed)"
                        : "legacy (cudnnFind*AlgorithmEx)")
        .add_string("placement", settings_.placement == HB_PLACEMENT_HOST ? "host" : "device")
        .add_bool("cuda_graphs", settings_.cuda_graphs)
        .add_bool("input_gradient", settings_.input_gradient);
    if (settings_.cuda_graphs)
        m.add_string("cuda_graph",
                     "first step eager, the whole step captured at the second and replayed from "
                     "then on, one graph for every batch");
    m.add_bool("fused_bn_relu_requested", settings_.fused_bn_relu)
        .add_string("device", "cuda:" + std::to_string(settings_.device))
        .add_string("device_name", device_name_)
        .add_string("compute_capability", compute_capability_)
        .add("cudnn_handle_bytes", handle_bytes_)
        .add_string("batchnorm", std::string(mode.own_channel_kernels() ? "own kernels" : "cuDNN") +
                                     " training mode (biased variance normalises, unbiased "
                                     "updates running_var)")
        .add("own_kernels", own_kernels.str());
    step_->add_manifest(m);
    return m.str();
}

}  // namespace cudnn_backend
