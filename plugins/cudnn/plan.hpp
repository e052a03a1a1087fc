// The training step of a layer graph as the GPU runs it, worked out on the host: shapes, the
// parameters of every layer, which BN+ReLU pairs are fused, which gradients each backward
// operation writes or adds to, where parameters live, and which transient buffers the step needs
// and when (the arena plan places them).
#pragma once

#include "hb/arena.hpp"
#include "hb/graph.hpp"
#include "hb/topology.hpp"
#include "options.hpp"

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace hb_cudnn {

using Shape = hb::Dims;  // hb::to_string prints one
using hb::align_up;
using hb::ArenaPlan;
using hb::BufferRequest;
using hb::find_conflict;
using hb::plan_arena;

struct ValuePlan {
    std::string name;
    Shape shape;
    std::vector<int> consumers;  // layer indices, in execution order (repeated if used twice)
    bool is_input = false;
    bool is_loss = false;
    bool materialized = true;  // false for a BN output that a fused BN+ReLU never writes
    bool needs_gradient = false;
    int buffer = -1;           // arena request of the activation, -1 when not in the arena
    int gradient_buffer = -1;  // arena request of its gradient
};

// The SDK's layer, with what the step works out for it.
struct LayerPlan : hb::Layer {
    LayerPlan() = default;
    explicit LayerPlan(const hb::Layer& layer) : hb::Layer(layer) {}

    Shape in, out;       // shapes of inputs[0] and of output
    int loss_slot = -1;  // mse_loss: its place among the losses

    bool fused_relu = false;  // batchnorm: applies the ReLU after it and writes that ReLU's output
    bool absorbed = false;    // relu: computed by the batchnorm before it
    int writes = -1;          // the value the forward pass writes (the ReLU's output when fused)

    // Backward: per input slot, whether a gradient is produced for it and whether it is added to
    // what an earlier backward operation (in backward order) already wrote there.
    std::vector<bool> input_gradient, accumulate;
    // Some loss depends on the layer's output: it runs backward (a layer that does not leaves its
    // parameters' gradients at zero).
    bool runs_backward = false;

    int saved = -1;  // arena request of the batchnorm's saved mean and inverse deviation

    int forward_time = 0, backward_time = 0;
};

struct TensorPlan {
    std::string name;
    int layer = -1;
    hb_tensor_role role = HB_ROLE_WEIGHT;
    bool trainable = false;
    int rank = 1;
    int64_t shape[4] = {1, 1, 1, 1};
    int64_t elements = 0;
    // Offset in floats in the parameter block (trainable; gradients, square averages and momentum
    // buffers use the same offsets in their own blocks) or in the statistics block (running stats).
    int64_t offset = 0;
};

// Which BN layers may fuse the ReLU after them: their output feeds only that ReLU.
std::vector<int> fusion_candidates(const hb_graph& graph);

// Whether a fusion candidate applies the ReLU after it, asked of the layer as read from the graph
// (its name and shapes), before any fusion is applied.
using FusionChoice = std::function<bool(const LayerPlan& batchnorm)>;

class Plan {
public:
    // Checks the graph (throws hb::Error naming the layer) and plans it; the BN layers in `fuse`
    // (each one of fusion_candidates) also apply their ReLU. Activations and their gradients
    // are stored as `storage`. With `input_gradient`, the graph's input gets a gradient too, from
    // every layer that reads it and runs backward, in a buffer that lives to the step's end
    // (where it is read); without, the input gets none and nothing runs for it.
    Plan(const hb_graph& graph, const std::set<int>& fuse = {}, Storage storage = Storage::f32,
         bool input_gradient = false);
    // The same, with the fusions `fuse` accepts of the candidates, asked once each in layer order:
    // whatever decides them (a trial on the device) sees the layer before the plan is finished,
    // so the plan is built once.
    Plan(const hb_graph& graph, Storage storage, const FusionChoice& fuse,
         bool input_gradient = false);

    const std::vector<ValuePlan>& values() const { return values_; }
    const std::vector<LayerPlan>& layers() const { return layers_; }
    const std::vector<TensorPlan>& tensors() const { return tensors_; }
    int input() const { return input_; }
    // Whether the plan was asked for the input's gradient. Its buffer is the input value's
    // gradient_buffer: -1 when no layer that runs backward reads the input (the gradient is zero).
    bool input_gradient() const { return input_gradient_; }
    Shape target_shape() const { return target_; }
    int loss_count() const { return loss_count_; }
    int64_t parameter_floats() const { return parameter_floats_; }    // with alignment padding
    int64_t statistics_floats() const { return statistics_floats_; }  // with alignment padding
    int fusions() const;
    Storage storage() const { return storage_; }

    // The step's time line: layer i's forward at time i, its backward at 2L-1-i, then the
    // optimizer at 2L.
    int step_length() const { return 2 * static_cast<int>(layers_.size()) + 1; }

    // Transient buffers: the plan's own (activations, gradients, BN statistics) and those added
    // by the device code (workspaces, reserve spaces), each with its lifetime.
    const std::vector<BufferRequest>& requests() const { return requests_; }
    int add_request(int64_t bytes, int first, int last, const std::string& what);

    // Floats each tensor block is aligned to, so every parameter starts on a 256-byte boundary.
    static constexpr int64_t tensor_alignment = 64;

private:
    // Reads the graph, fuses the batch norms `fusions` names of it, plans gradients and buffers.
    void build(const hb_graph& source,
               const std::function<std::set<int>(const hb::Graph&)>& fusions);
    void read_values(const hb::Graph& graph);
    void read_tensors(const hb::Graph& graph);
    void read_layers(const hb::Graph& graph);
    void apply_topology(const hb::Graph& graph, const hb::Topology& topology);
    void plan_gradients(const hb::Graph& graph, const hb::Topology& topology);
    void plan_buffers();

    std::vector<ValuePlan> values_;
    std::vector<LayerPlan> layers_;
    std::vector<TensorPlan> tensors_;
    std::vector<BufferRequest> requests_;
    Storage storage_ = Storage::f32;
    bool input_gradient_ = false;
    int input_ = -1;
    Shape target_;
    int loss_count_ = 0;
    int64_t parameter_floats_ = 0, statistics_floats_ = 0;
};

}  // namespace hb_cudnn
