// The one header a plugin author reads: derive from hb::Plugin and hb::Session, write ordinary
// C++ (exceptions, RAII) and export the plugin with HB_PLUGIN(MyPlugin). Every exception a method
// throws becomes its call's status and message (hb::Error carries a status; std::bad_alloc is
// HB_OUT_OF_MEMORY; anything else HB_ERROR), and every call's arguments are checked before they
// reach a session, so a session may rely on what each method's contract says it gets. The
// harness calls a session from one thread at a time, the thread that created it.
//
// Buffers: float32, dense, host memory, activations NCHW and convolution weights OIHW. Buffers
// the harness passes are borrowed for the call only: copy what must outlive it. Tensors are in
// graph order (hb_graph.tensors); "per trainable tensor" skips the running statistics.
#pragma once

#include "hb/error.hpp"
#include "hb/options.hpp"
#include "hb/plugin.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace hb {

struct StepResult {
    double loss = 0;  // the sum of the graph's mse_loss outputs, before this step's update
    // Milliseconds of each phase, negative where not measured (announce HB_CAP_PHASE_TIMES when
    // they are): forward_ms the batch's staging (the host copy with placement host), the forward
    // pass and the loss; backward_ms every gradient; optimizer_ms the update (hb_step_result).
    double forward_ms = -1, backward_ms = -1, optimizer_ms = -1;
};

// Tells the harness that a gradient buffer is final (hb_gradient_ready); a no-op when the harness
// passed no callback.
struct GradientReady {
    hb_gradient_ready fn = nullptr;
    void* context = nullptr;
    void operator()(int32_t buffer) const {
        if (fn) fn(context, buffer);
    }
};

// One training session: the graph compiled for one device, its state, its batches. The harness
// calls load_state and set_batches once each, in that order, then steps (the SDK lets either come
// again between steps; nothing in the harness relies on it).
class Session {
public:
    virtual ~Session() = default;

    // One buffer per tensor: copies the parameters and running statistics in. The optimizer's
    // state is not touched: a session starts with every square average at
    // hb_optimizer.initial_square_average and every momentum buffer at 0.
    virtual void load_state(const float* const* tensors) = 0;

    // One buffer per trainable tensor: RMSProp's square averages v. Not called by `harness run`
    // or `check`; a backend that takes them announces nothing, one that does not keeps this.
    virtual void load_optimizer_state(const float* const* /*square_averages*/) {
        throw Error("load_optimizer_state is not supported", HB_UNSUPPORTED);
    }

    // `count` >= 1 batches, inputs N x 3 x S x S and targets as hb_graph.target_shape. With
    // HB_PLACEMENT_DEVICE, take them now, once, outside every timed step (a CPU backend copies
    // them into its own memory); with HB_PLACEMENT_HOST, keep the pointers' contents (copied now)
    // as host arrays and copy step k's batch inside step k, as a framework's feed does.
    virtual void set_batches(int32_t count, const float* const* inputs,
                             const float* const* targets) = 0;

    // One training step on batch `batch`, in [0, count): the forward pass, the loss, every
    // gradient, the running statistics' update and the optimizer's. Returns once the step's
    // work is finished (a device synchronised): the harness times the call.
    virtual StepResult step(int32_t batch) = 0;

    // One buffer per tensor: the parameters and running statistics now, in the canonical layout.
    virtual void read_state(float* const* tensors) = 0;

    // One pointer per tensor, null where that gradient is not wanted (always for the running
    // statistics): the last step's gradient of the loss, before weight decay is added
    // (announce HB_CAP_GRADIENTS). Called only after a step, and only in a session whose
    // description says the harness reads back (hb::reads_back): a timed session may keep none.
    virtual void read_gradients(float* const* /*gradients*/) {
        throw Error("read_gradients is not supported", HB_UNSUPPORTED);
    }

    // The most memory the session has held, host or device (announce HB_CAP_PEAK_MEMORY).
    virtual uint64_t peak_memory_bytes() {
        throw Error("peak_memory is not supported", HB_UNSUPPORTED);
    }

    // A JSON object saying what ran, started with hb::manifest(math, threads)
    // (include/hb/manifest.hpp), whose two keys the harness reads. Called after the steps.
    virtual std::string manifest_json() = 0;

    // Per-operation events (announce HB_CAP_PROFILE): on or off for the steps that follow, and
    // the last step's events, none when it ran unprofiled (hb::EventLog keeps them).
    // since ABI 2.1
    virtual void set_profiling(bool /*enabled*/) {
        throw Error("profiling is not supported", HB_UNSUPPORTED);
    }
    virtual const std::vector<hb_event>& events() {
        throw Error("profiling is not supported", HB_UNSUPPORTED);
    }

    // The step in two halves (announce HB_CAP_DATA_PARALLEL; docs/parallel.md): the gradient
    // buffers, one per trainable tensor, fixed for the session's life, in the order the backward
    // pass completes them; forward_backward fills them, calling `ready` with each buffer's index
    // as it is final, and returns the loss and the forward and backward times; apply_update
    // applies the optimizer to what they hold then (another rank's sum, say) and returns its
    // time. apply_update comes only after a forward_backward, at most once for it.
    // since ABI 2.2
    virtual std::vector<hb_gradient_buffer> gradient_buffers() {
        throw Error("data-parallel steps are not supported", HB_UNSUPPORTED);
    }
    // The cudaStream_t the session's device work runs on, for buffers in device memory.
    virtual void* gradient_stream() { return nullptr; }
    virtual StepResult forward_backward(int32_t /*batch*/, const GradientReady& /*ready*/) {
        throw Error("data-parallel steps are not supported", HB_UNSUPPORTED);
    }
    virtual StepResult apply_update() {
        throw Error("data-parallel steps are not supported", HB_UNSUPPORTED);
    }

    // The gradient of the last step's loss with respect to its input batch, NCHW (announce
    // HB_CAP_INPUT_GRADIENT): called only in a session whose description asked for it
    // (hb::wants_input_gradient), after a step or a forward_backward.
    // since ABI 2.3
    virtual void read_input_gradient(float* /*gradient*/) {
        throw Error("the input's gradient is not supported", HB_UNSUPPORTED);
    }
};

// A session that implements the split step: its step() is forward_backward() then
// apply_update(), with both halves' times, and the three split calls are its to write.
class SplitStepSession : public Session {
public:
    StepResult step(int32_t batch) final {
        StepResult result = forward_backward(batch, {});
        result.optimizer_ms = apply_update().optimizer_ms;
        return result;
    }
    std::vector<hb_gradient_buffer> gradient_buffers() override = 0;
    StepResult forward_backward(int32_t batch, const GradientReady& ready) override = 0;
    StepResult apply_update() override = 0;
};

struct DeviceInfo {
    std::string name, description;  // "cpu", "cuda:0"; the processor or card
    bool available = true;
    std::string unavailable_reason;  // why not, when not: "no NVIDIA driver installed"
};

struct PluginInfo {
    std::string name, version, description;
    // HB_CAP_* flags: the optional Session methods that work, and HB_CAP_HOST_PLACEMENT. What
    // each promises, and what the harness does without it, is beside its flag in hb/plugin.h.
    uint32_t capabilities = 0;
    std::vector<std::pair<std::string, std::string>> libraries;  // name, version
    std::vector<DeviceInfo> devices;
    // Every option create_session takes, as hb::Options reads them: the harness rejects a
    // config's unknown or ill-typed option at its line before anything runs. An empty list
    // declares nothing (create_session alone checks), unless `takes_no_options`. Each option's
    // default is declared with it (OptionSpec), and `harness list` shows it.
    // since ABI 2.4
    std::vector<OptionSpec> options;
    bool takes_no_options = false;
};

// A backend: describes itself once, then creates sessions. Its constructor runs when the harness
// first calls the plugin; keep it cheap, and probe devices in describe().
class Plugin {
public:
    virtual ~Plugin() = default;
    virtual PluginInfo describe() = 0;
    // The graph, optimizer and options of `desc` are borrowed: copy what the session keeps.
    // Throw hb::Error with HB_UNSUPPORTED for a graph or option it cannot run, HB_UNAVAILABLE for
    // a device it cannot use here.
    virtual std::unique_ptr<Session> create_session(const hb_session_desc& desc) = 0;
};

}  // namespace hb

#define HB_PLUGIN_HPP_TYPES
#include "hb/detail/trampolines.hpp"

// Exports the plugin's entry symbol for the class PluginClass (derived from hb::Plugin).
#define HB_PLUGIN(PluginClass)                                        \
    extern "C" HB_EXPORT const hb_plugin_api* hb_plugin_entry(void) { \
        return ::hb::detail::Trampolines<PluginClass>::table();       \
    }
