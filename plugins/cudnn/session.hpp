// A training session of the cuDNN backend on one CUDA device: the step (training_step.hpp), the
// batches, optional CUDA graphs of the step, phase timing with events, per-operation events when
// profiled (operation_times.hpp), and state transfer in the canonical host format. A step enqueues
// its batch, forward and backward, then the update; the harness may also call the halves one at a
// time (ABI 2.2), with the gradient block's tensors as the gradient buffers between them.
#pragma once

#include "handles.hpp"
#include "hb/plugin.hpp"
#include "hb/profile.hpp"
#include "options.hpp"
#include "training_step.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace hb_cudnn {

class Session : public hb::Session {
public:
    // HB_UNAVAILABLE (with the CUDA runtime's reason) when the device cannot be used.
    explicit Session(const hb_session_desc& desc);
    ~Session() override;

    void load_state(const float* const* tensors) override;
    void load_optimizer_state(const float* const* square_averages) override;
    void set_batches(int32_t count, const float* const* inputs,
                     const float* const* targets) override;
    hb::StepResult step(int32_t batch) override;
    void read_state(float* const* tensors) override;
    void read_gradients(float* const* gradients) override;
    // ABI 2.3; the SDK calls it only where the session description asked for it.
    void read_input_gradient(float* gradient) override;
    uint64_t peak_memory_bytes() override;
    std::string manifest_json() override;
    void set_profiling(bool enabled) override;
    const std::vector<hb_event>& events() override;
    // Data-parallel steps (ABI 2.2). Refused with cuda_graphs (one graph holds the whole step)
    // and while profiling (a profiled step's operations are held to the whole step's order).
    std::vector<hb_gradient_buffer> gradient_buffers() override;
    void* gradient_stream() override;
    hb::StepResult forward_backward(int32_t batch, const hb::GradientReady& ready) override;
    hb::StepResult apply_update() override;

    // The track of every event: the step runs on one stream.
    static constexpr const char* track = "stream 0";

private:
    static Settings checked_settings(const hb_session_desc& desc);
    // A step's first half, from its start mark: the batch copied into the step's fixed buffers
    // (host placement, or a captured step).
    void enqueue_batch(int batch);
    // Then forward and backward (`final` as TrainingStep::backward's), and the update: what a
    // captured step holds.
    void enqueue_passes(int batch, const std::function<void(int tensor)>& final);
    void enqueue_update();
    void enqueue_step(int batch);
    // Enqueues the losses' copy to the host; sum_losses reads them once it is complete.
    void enqueue_losses();
    double sum_losses() const;
    void refuse_split(const char* call) const;
    // The batch input as the step reads it, enqueued from NCHW float32 on the device: through
    // `layout` (float32) into NHWC when the session's layout is, and into `storage` in bf16 math.
    // Returns where it is, `nchw` itself when neither applies.
    const void* step_input(const float* nchw, float* layout, void* storage);
    GraphExec capture(int batch);
    void copy(void* destination, const void* source, size_t bytes, cudaMemcpyKind kind);
    // Copies one tensor between its device block and a canonical host buffer.
    void upload_tensor(int t, const float* host, float* block);
    void download_tensor(int t, const float* block, float* host);
    // Copies `elements` values stored as `storage` from the device into a canonical host buffer:
    // as float32, and, where `dims` gives four dimensions, from the session's layout into NCHW
    // (OIHW for a convolution's weight).
    void download(const void* device, int64_t elements, Storage storage, const int64_t* dims,
                  float* host);

    Settings settings_;
    Stream stream_;
    CudnnHandle cudnn_;
    uint64_t handle_bytes_ = 0;  // what creating the cuDNN handle took from the device
    std::unique_ptr<TrainingStep> step_;
    Event start_, forward_end_, backward_end_, update_start_, end_;
    PinnedBuffer losses_;

    int64_t input_elements_ = 0, target_elements_ = 0;
    std::vector<std::vector<float>> host_inputs_, host_targets_;  // host placement
    std::vector<DeviceBuffer> device_inputs_, device_targets_;    // device placement, converted
    DeviceBuffer staged_input_, staged_target_;  // host placement: the batch as copied, NCHW
    DeviceBuffer layout_input_, layout_target_;  // host placement, NHWC: after conversion
    DeviceBuffer storage_input_;                 // host placement, bf16: after conversion
    DeviceBuffer graph_input_, graph_target_;    // device placement with CUDA graphs
    // The captured step, for every batch: unprofiled, and profiled (with the events of its
    // operations as nodes, so it is captured after the step's pool of events was created, and
    // destroyed before it: step_ holds the pool).
    GraphExec captured_step_, profiled_captured_step_;
    int64_t eager_steps_ = 0;
    hb::EventLog log_;  // the last step's events when profiled
    std::string device_name_, compute_capability_;
    std::vector<int32_t> buffer_of_tensor_;  // each trainable tensor's gradient buffer
};

}  // namespace hb_cudnn
