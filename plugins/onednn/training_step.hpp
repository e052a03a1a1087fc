// One training step of a layer graph with oneDNN primitives on the CPU: the plan's primitives,
// their buffers in one arena shared by lifetime, the parameters and RMSProp state, the batches,
// and the three phases of a step (forward, backward, optimizer update) as lists of operations.
#pragma once

#include "arena.hpp"
#include "graph.hpp"
#include "hb/arena.hpp"
#include "hb/profile.hpp"
#include "options.hpp"
#include "plan.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hb_onednn {

class TrainingStep {
public:
    // Plans, creates every primitive and allocates every buffer; throws hb::Error.
    TrainingStep(const hb_graph& graph, const Settings& settings);

    const Graph& graph() const { return graph_; }
    int threads() const { return settings_.threads; }

    // Canonical layouts: OIHW / [C], dense float32.
    void load_tensor(int tensor, const float* canonical);
    void read_tensor(int tensor, float* canonical);
    void read_gradient(int tensor, float* canonical);
    // The gradient of the last backward's loss with respect to the input batch, NCHW (zero when
    // no layer sends the input one); only with Settings::input_gradient.
    void read_input_gradient(float* canonical);
    void load_square_average(int tensor, const float* canonical);

    void set_batches(int count, const float* const* inputs, const float* const* targets);
    int batch_count() const { return batch_count_; }

    // Per-operation events (docs/design.md §3 "Profiling"): begin_step starts a step's events,
    // one per operation forward, backward and update run while profiling is on.
    void set_profiling(bool enabled) { events_.set_enabled(enabled); }
    void begin_step() { events_.begin_step(); }
    const std::vector<hb_event>& events() const { return events_.events(); }

    // The gradient of each trainable tensor where backward writes it and update reads it, in its
    // master layout (never padded), in the order backward completes them.
    struct GradientBuffer {
        int tensor = -1;
        float* data = nullptr;
        int64_t floats = 0;
    };
    const std::vector<GradientBuffer>& gradient_buffers() const { return gradient_buffers_; }

    // The loss of batch `batch` (stages it first under host placement).
    double forward(int batch);
    // `final` (may be empty) hears each gradient as it is complete, by its index in
    // gradient_buffers().
    void backward(const std::function<void(int)>& final = {});
    void update();

    uint64_t allocated_bytes() const;
    std::string manifest_json() const;

private:
    // A buffer an operation uses: a block of the arena, or a memory object of its own.
    struct Ref {
        dnnl::memory::desc md;
        int block = -1;
        dnnl::memory fixed;
    };
    struct Op {
        int layer = -1;
        const char* what = "";  // also its event's name
        hb_phase phase = HB_PHASE_OTHER;
        dnnl::primitive primitive;
        std::vector<std::pair<int, Ref>> refs;
        std::unordered_map<int, dnnl::memory> args;
        std::function<void()> host;
        dnnl::memory::desc scratchpad;
    };
    struct TensorStorage {
        int64_t offset = -1;           // floats into the parameter (trainable) or state arrays
        dnnl::memory value, gradient;  // master layout
        dnnl::memory working;          // conv weights in their forward layout, when not the master
    };
    struct LossLayer {
        int layer = -1, target_layout = -1;
        double loss = 0;
    };
    struct TargetLayout {
        dnnl::memory::desc md;
        std::vector<uint8_t> mask;  // empty without padding
    };

    // Planning.
    int forward_step(int layer) const { return 1 + layer; }
    int backward_step_of(int layer) const { return 2 * graph_.num_layers() - layer; }
    int last_step() const { return 2 * graph_.num_layers() + 1; }
    int add_block(const dnnl::memory::desc& md, int first, int last);
    void plan_value_blocks();
    void plan_parameters();
    // The channel block of a pooling or upsampling layer run by the plugin's own loops, 0 when
    // oneDNN's primitive runs it; and, for pooling, the bytes its argmax workspace takes.
    int native_block(int layer) const;
    dnnl::memory::desc native_workspace(int layer) const;
    void build_forward(int layer);
    void build_backward(int layer);
    void allocate_and_bind();
    void list_gradient_buffers();
    void export_plain(const dnnl::memory& from, const dnnl::memory::desc& plain, float* canonical);

    // Operations.
    Ref value_ref(int value) const;
    Ref gradient_ref(int value) const;
    Ref temporary(const dnnl::memory::desc& md, int layer);
    Ref tensor_ref(int tensor) const;
    Ref tensor_gradient_ref(int tensor, int layer);
    Ref working_ref(int tensor) const;
    Ref fixed(const dnnl::memory& m) const { return Ref{m.get_desc(), -1, m}; }
    Op primitive_op(int layer, const char* what, hb_phase phase,
                    const dnnl::primitive_desc_base& pd, dnnl::primitive primitive,
                    std::vector<std::pair<int, Ref>> refs);
    // A reorder's phase is HB_PHASE_REORDER, with the layer it serves.
    Op reorder_op(int layer, const Ref& from, const Ref& to, bool accumulate);
    Op host_op(int layer, const char* what, hb_phase phase, std::function<void()> body);
    // Where a primitive writes the gradient of one input (`contribution` may be null: discarded),
    // and the operations that deliver it when it cannot write the gradient buffer itself.
    Ref gradient_destination(const Contribution* contribution, const dnnl::memory::desc& produced,
                             int layer, std::vector<Op>& then);
    float* data(const Ref& ref) const;
    // `done` (may be empty) hears the index of each operation once it is complete.
    void run(std::vector<Op>& ops, const std::function<void(int)>& done = {});
    void note_impl(const char* kind, const dnnl::primitive_desc_base& pd);
    void note_impl(const char* kind, const std::string& impl);

    Settings settings_;
    Graph graph_;
    Topology topology_;
    dnnl::engine engine_;
    dnnl::stream stream_;
    Plan plan_;
    GradientPlan gradients_;

    std::vector<hb::BufferRequest> blocks_;
    std::vector<int> value_block_, gradient_block_, derived_block_, workspace_block_;
    hb::ArenaPlan arena_layout_;
    AlignedBuffer arena_;
    char* arena_base_ = nullptr;
    AlignedBuffer scratchpad_;
    uint64_t scratchpad_bytes_ = 0, workspace_bytes_ = 0;

    std::vector<TensorStorage> tensors_;
    AlignedBuffer parameters_, gradients_buffer_, square_averages_, momentum_, state_;
    int64_t parameter_floats_ = 0;
    std::vector<dnnl::memory> means_, variances_;  // per batch-norm layer
    uint64_t owned_bytes_ = 0;                     // memory objects allocated by oneDNN

    std::vector<Op> forward_ops_, backward_ops_;
    std::vector<Op> update_ops_;  // RMSProp, then the working copies of the weights refreshed
    std::vector<GradientBuffer> gradient_buffers_;
    std::vector<int> completed_by_;  // per gradient buffer: the backward operation, or -1 for none
    std::vector<LossLayer> losses_;
    std::vector<TargetLayout> target_layouts_;
    std::vector<const float*> current_targets_;

    dnnl::memory input_;  // the graph input, pointed at the current batch
    int batch_count_ = 0;
    std::vector<AlignedBuffer> batch_inputs_;  // input layout (device) or canonical
    // Device placement: per target layout, then batch; host placement: one canonical list.
    std::vector<std::vector<AlignedBuffer>> batch_targets_;
    AlignedBuffer staged_input_;
    std::vector<AlignedBuffer> staged_targets_;
    dnnl::reorder stage_input_;
    std::vector<dnnl::reorder> stage_targets_;

    hb::EventLog events_;

    // Manifest.
    std::vector<std::pair<std::string, std::vector<std::pair<std::string, int>>>> impls_;
    int forward_reorders_ = 0, backward_reorders_ = 0, update_reorders_ = 0;
};

}  // namespace hb_onednn
