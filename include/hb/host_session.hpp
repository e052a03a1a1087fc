// A CPU backend's session in which the plugin writes its kernels alone: derive from
// hb::HostSession and override one forward and one backward per layer kind
// (docs/writing-a-plugin.md, plugins/loops/). The base does the rest of hb::Session's contract in
// float32 host memory: the state (hb::HostState), the batches and their staging with placement
// host, the walk of the graph forward and backward, every buffer, the sum of a value's gradients
// over its readers, the phase times, RMSProp, the read-back of the gradients and the input's
// gradient, the split step, per-layer profiling events, the peak memory and the manifest's start:
// its plugin declares hb::kAllCapabilities. Header-only; the base's own work is in
// hb/detail/host_session.hpp.
#pragma once

#include "hb/graph.hpp"
#include "hb/host_state.hpp"
#include "hb/json.hpp"
#include "hb/plugin.hpp"
#include "hb/profile.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace hb {

// One layer's buffers in one pass, float32, dense: activations NCHW, convolution weights OIHW.
// What each kind computes, forward and backward, is beside hb_layer_kind in hb/plugin.h.
struct LayerPass {
    const Layer& layer;           // its kind and fields (hb/graph.hpp)
    std::vector<const float*> x;  // the inputs (an add has two or more, the others one)
    std::vector<Dims> x_dims;
    float* y;                       // the output: the forward pass writes it, the backward reads it
    Dims y_dims;                    // a loss's is 1 x 1 x 1 x 1: y[0] is the loss
    const float* weight = nullptr;  // conv2d's weight, batchnorm's gamma; null where absent
    const float* bias = nullptr;    // conv2d's bias, batchnorm's beta; null where absent
    float* running_mean = nullptr;  // batchnorm: the forward pass updates them; null where absent
    float* running_var = nullptr;
    const float* target = nullptr;  // mse_loss: the batch's target, of x_dims[0]
    std::vector<float>& saved;      // the layer's own, kept from its forward to its backward
    // Backward only: the output's gradient (a loss's is 1), and the gradients to write, not add
    // to: one per input, null where none is wanted; dweight and dbias null where absent.
    const float* dy = nullptr;
    std::vector<float*> dx;
    float* dweight = nullptr;
    float* dbias = nullptr;
};

class HostSession : public SplitStepSession {
public:
    // Checks `desc` (its device must be "cpu"); `backend` names the backend in messages.
    HostSession(const hb_session_desc& desc, const std::string& backend);

    void load_state(const float* const* tensors) override;
    void load_optimizer_state(const float* const* square_averages) override;
    void set_batches(int32_t count, const float* const* inputs,
                     const float* const* targets) override;
    void read_state(float* const* tensors) override;
    void read_gradients(float* const* gradients) override;
    void read_input_gradient(float* gradient) override;
    std::vector<hb_gradient_buffer> gradient_buffers() override;
    StepResult forward_backward(int32_t batch, const GradientReady& ready) override;
    StepResult apply_update() override;
    uint64_t peak_memory_bytes() override;
    void set_profiling(bool enabled) override;
    const std::vector<hb_event>& events() override;
    std::string manifest_json() final;

protected:
    // The manifest: hb::manifest(fp32, 1), the layout and the placement; a backend that runs on
    // more threads, or wants to say more, overrides it and adds to the base's.
    virtual JsonObject manifest() const;

    // One forward and one backward per layer kind; the pass's layer says which.
    virtual void conv2d(const LayerPass& pass) = 0;
    virtual void conv2d_backward(const LayerPass& pass) = 0;
    virtual void batchnorm(const LayerPass& pass) = 0;
    virtual void batchnorm_backward(const LayerPass& pass) = 0;
    virtual void relu(const LayerPass& pass) = 0;
    virtual void relu_backward(const LayerPass& pass) = 0;
    virtual void maxpool2d(const LayerPass& pass) = 0;
    virtual void maxpool2d_backward(const LayerPass& pass) = 0;
    virtual void upsample(const LayerPass& pass) = 0;
    virtual void upsample_backward(const LayerPass& pass) = 0;
    virtual void add(const LayerPass& pass) = 0;
    virtual void add_backward(const LayerPass& pass) = 0;
    virtual void mse_loss(const LayerPass& pass) = 0;
    virtual void mse_loss_backward(const LayerPass& pass) = 0;

    const Graph& graph() const { return graph_; }

private:
    LayerPass pass_of(int layer);
    void forward(const LayerPass& pass);
    void backward(const GradientReady& ready);
    void backward(const LayerPass& pass);
    float* tensor(int t);  // null for -1
    float* gradient(int t);

    Graph graph_;
    HostState<float> state_;
    hb_placement placement_;
    bool input_gradient_wanted_;
    // Per value its buffer (none for the graph's input: the batch's) and its gradient's, per
    // layer what it saved, per input slot a gradient to add.
    std::vector<std::vector<float>> values_, gradients_, saved_, scratch_;
    std::vector<float> staged_input_, staged_target_;  // placement host: this step's batch
    const float* input_ = nullptr;
    const float* target_ = nullptr;
    std::vector<int> gradient_order_;  // the gradient buffers, in the order they are final
    size_t unread_tensors_ = 0;        // its first ones, read by no layer
    EventLog events_;
};

}  // namespace hb

#include "hb/detail/host_session.hpp"
