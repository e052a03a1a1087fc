// What the training step needs to know about the graph's structure, independent of oneDNN: who
// uses each value, which batch norms absorb the ReLU after them, which layers take part in the
// backward pass, and how the gradient of every value is assembled from its users' contributions
// (sharing one buffer along `add` layers where no later write can disturb a reader).
#pragma once

#include "graph.hpp"

#include <functional>
#include <vector>

namespace onednn_backend {

using hb::Use;

struct Topology {
    std::vector<std::vector<Use>> uses;  // per value, in forward order
    std::vector<int> producer;           // per value: the layer computing it, -1 for the input
    std::vector<int> fused_relu;         // per layer: the ReLU a batch norm absorbs, or -1
    std::vector<bool> absorbed;          // per layer: a ReLU computed by the batch norm before it
    std::vector<int> output;             // per layer: the value it writes (after fusion)
    std::vector<bool> runs_backward;     // per layer
    std::vector<bool> has_gradient;      // per value: needed by the backward pass
    std::vector<bool> is_loss;           // per value: an mse_loss output
};

// A batch norm absorbs the ReLU that is the only user of its output (when `fuse` is set).
Topology analyse(const Graph& graph, bool fuse);

// How one user's gradient reaches the value it used, in backward order.
enum class Delivery {
    write,           // the layer's backward writes the gradient buffer itself (first contribution)
    write_then_add,  // it writes a temporary, which is then added to the gradient buffer
    accumulate,      // it adds into the gradient buffer itself (the loss kernel)
    share,           // an add's input: the gradient buffer is the add output's, nothing to do
    copy,            // an add's input: the add output's gradient is copied (first contribution)
    add_from         // an add's input: the add output's gradient is added to the buffer
};

struct Contribution {
    int layer = -1, slot = -1, value = -1;
    int from = -1;  // add layers: the output value whose gradient is passed on
    Delivery delivery = Delivery::write;
};

struct GradientBuffer {
    int first = 0, last = 0;  // backward steps (0 = the last layer's backward) it is live in
};

struct GradientPlan {
    std::vector<int> buffer;              // per value: its gradient buffer, -1 without gradient
    std::vector<GradientBuffer> buffers;  // liveness of each buffer
    std::vector<std::vector<Contribution>> contributions;  // per layer, in input-slot order
};

// `same_layout(a, b)`: values a and b are stored in the same memory layout, so one gradient
// buffer can serve both.
GradientPlan plan_gradients(const Graph& graph, const Topology& topology,
                            const std::function<bool(int, int)>& same_layout);

// The backward step of layer l (layers run backward from the last one).
inline int backward_step(const Graph& graph, int layer) {
    return graph.num_layers() - 1 - layer;
}

}  // namespace onednn_backend
