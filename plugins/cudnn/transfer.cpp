// What a cuDNN session copies between the host and the device: the tensors in and out (a conv
// weight reordered for NHWC), the batches staged in the step's layout and storage, each step's
// batch into the buffers the step reads, and the gradients and the input's gradient read back.
#include "check.hpp"
#include "events.hpp"
#include "kernel_math.hpp"
#include "kernels.hpp"
#include "math_mode.hpp"
#include "session.hpp"

#include <algorithm>
#include <vector>

namespace hb_cudnn {
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

}  // namespace

// Every transfer goes through the session's stream, and waits for it: that stream is
// non-blocking, so it would not wait for cudaMemcpy's legacy default stream, and the step's work
// queued on it after an upload must read the uploaded data.
void Session::copy(void* destination, const void* source, size_t bytes, cudaMemcpyKind kind) {
    HB_CHECK(cudaMemcpyAsync(destination, source, bytes, kind, stream_.get()));
    HB_CHECK(cudaStreamSynchronize(stream_.get()));
}

void Session::upload_tensor(int t, const float* host, float* block) {
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

void Session::download_tensor(int t, const float* block, float* host) {
    const TensorPlan& tensor = step_->plan().tensors()[size_t(t)];
    download(block + tensor.offset, tensor.elements, Storage::f32,
             tensor.rank == 4 ? tensor.shape : nullptr, host);
}

void Session::download(const void* device, int64_t elements, Storage storage, const int64_t* dims,
                       float* host) {
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

void Session::load_state(const float* const* tensors) {
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

void Session::load_optimizer_state(const float* const* square_averages) {
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

void Session::set_batches(int32_t count, const float* const* inputs, const float* const* targets) {
    ErrorContext context("set_batches");
    HB_CHECK(cudaStreamSynchronize(stream_.get()));
    captured_step_.reset();
    profiled_captured_step_.reset();
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

const void* Session::step_input(const float* nchw, float* layout, void* storage) {
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

void Session::enqueue_batch(int batch) {
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

void Session::read_state(float* const* tensors) {
    ErrorContext context("read_state");
    HB_CHECK(cudaStreamSynchronize(stream_.get()));
    const auto& plan = step_->plan();
    for (size_t i = 0; i < plan.tensors().size(); ++i) {
        const TensorPlan& t = plan.tensors()[i];
        download_tensor(int(i), t.trainable ? step_->parameters() : step_->statistics(),
                        tensors[i]);
    }
}

void Session::read_gradients(float* const* gradients) {
    ErrorContext context("read_gradients");
    HB_CHECK(cudaStreamSynchronize(stream_.get()));
    const auto& plan = step_->plan();
    for (size_t i = 0; i < plan.tensors().size(); ++i) {
        if (!plan.tensors()[i].trainable || !gradients[i]) continue;
        download_tensor(int(i), step_->gradients(), gradients[i]);
    }
}

void Session::read_input_gradient(float* gradient) {
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

}  // namespace hb_cudnn
