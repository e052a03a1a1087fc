// What every backend's training step needs to know about the graph's structure, whatever library
// computes it: who uses each value, which batch norms absorb the ReLU after them, which layers
// take part in the backward pass, and how the gradient of every value is assembled from its
// users' contributions, in backward order. Header-only, standard library only.
#pragma once

#include "hb/graph.hpp"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

namespace hb {

struct Topology {
    std::vector<std::vector<Use>> uses;  // per value, in forward order
    std::vector<int> producer;           // per value: the layer computing it, -1 for the input
    std::vector<int> fused_relu;         // per layer: the ReLU a batch norm absorbs, or -1
    std::vector<bool> absorbed;          // per layer: a ReLU computed by the batch norm before it
    std::vector<int> output;             // per layer: the value it writes (after fusion)
    std::vector<bool> runs_backward;     // per layer: some loss depends on its output
    std::vector<bool> has_gradient;      // per value: read by a layer that runs backward
    std::vector<bool> is_loss;           // per value: an mse_loss output
};

// Layer l's place in the backward pass: 0 for the last layer, which runs backward first.
inline int backward_step(const Graph& graph, int layer) {
    return graph.num_layers() - 1 - layer;
}

// Every batch norm that may absorb the ReLU after it (batchnorm_relu_pairs), in execution order.
inline std::vector<int> fusable_batchnorms(const Graph& graph) {
    std::vector<int> batchnorms;
    for (const auto& pair : batchnorm_relu_pairs(graph, uses_of(graph)))
        batchnorms.push_back(pair.first);
    return batchnorms;
}

// `fused_batchnorms`: the batch norms that absorb the ReLU after them, each one of
// batchnorm_relu_pairs' (throws hb::Error otherwise). The fused ReLU's output is then written by
// the batch norm, and the batch norm's own output by no one. The graph's input has a gradient only
// when `input_gradient` asks for one (hb::wants_input_gradient).
inline Topology analyse(const Graph& graph, const std::vector<int>& fused_batchnorms,
                        bool input_gradient = false) {
    const auto layers = static_cast<size_t>(graph.num_layers());
    const auto values = static_cast<size_t>(graph.num_values());
    Topology t;
    t.uses = uses_of(graph);
    t.producer.assign(values, -1);
    t.fused_relu.assign(layers, -1);
    t.absorbed.assign(layers, false);
    t.output.assign(layers, -1);
    t.runs_backward.assign(layers, false);
    t.has_gradient.assign(values, false);
    t.is_loss.assign(values, false);

    const std::vector<std::pair<int, int>> pairs = batchnorm_relu_pairs(graph, t.uses);
    for (int batchnorm : fused_batchnorms) {
        const auto pair = std::find_if(pairs.begin(), pairs.end(),
                                       [&](const auto& p) { return p.first == batchnorm; });
        if (pair == pairs.end())
            throw Error("BN+ReLU fusion: layer " + std::to_string(batchnorm) +
                        " is not a batch norm whose output one ReLU alone reads");
        t.fused_relu[static_cast<size_t>(pair->first)] = pair->second;
        t.absorbed[static_cast<size_t>(pair->second)] = true;
    }
    for (size_t l = 0; l < layers; ++l) {
        const Layer& layer = graph.layers[l];
        const int relu = t.fused_relu[l];
        t.output[l] = relu >= 0 ? graph.layers[static_cast<size_t>(relu)].output : layer.output;
        if (layer.kind == HB_LAYER_MSE_LOSS) t.is_loss[static_cast<size_t>(layer.output)] = true;
        t.producer[static_cast<size_t>(layer.output)] = static_cast<int>(l);
    }
    for (size_t l = 0; l < layers; ++l)
        if (t.fused_relu[l] >= 0)
            t.producer[static_cast<size_t>(t.output[l])] = static_cast<int>(l);
    for (size_t l = layers; l-- > 0;) {
        if (t.absorbed[l]) continue;
        const Layer& layer = graph.layers[l];
        t.runs_backward[l] =
            layer.kind == HB_LAYER_MSE_LOSS || t.has_gradient[static_cast<size_t>(t.output[l])];
        if (!t.runs_backward[l]) continue;
        for (int v : layer.inputs)
            if (v != graph.input || input_gradient) t.has_gradient[static_cast<size_t>(v)] = true;
    }
    return t;
}

// How one user's gradient reaches the value it used.
enum class Delivery {
    write,           // the layer's backward writes the gradient buffer itself (first contribution)
    write_then_add,  // it writes a temporary, which is then added to the gradient buffer
    accumulate,      // it adds into the gradient buffer itself
    share,           // an add's input: the gradient buffer is the add output's, nothing to do
    copy,            // an add's input: the add output's gradient is copied (first contribution)
    add_from         // an add's input: the add output's gradient is added to the buffer
};

// Whether a delivery adds to what an earlier contribution (in backward order) left in the buffer.
inline bool adds_to_buffer(Delivery d) {
    return d == Delivery::write_then_add || d == Delivery::accumulate || d == Delivery::add_from;
}

struct Contribution {
    int layer = -1, slot = -1, value = -1;
    int from = -1;  // add layers: the output value whose gradient is passed on
    Delivery delivery = Delivery::write;
};

struct GradientBuffer {
    int first = 0, last = 0;  // backward steps (backward_step) it is live in
};

struct GradientPlan {
    std::vector<int> buffer;              // per value: its gradient buffer, -1 without gradient
    std::vector<GradientBuffer> buffers;  // liveness of each buffer
    std::vector<std::vector<Contribution>> contributions;  // per layer, in input-slot order
};

// What a backend can do, which decides how contributions are delivered.
struct GradientRules {
    // Values a and b are stored alike, so that an add's input may use the gradient buffer of
    // the add's output when no later write can disturb a reader of it.
    std::function<bool(int, int)> same_layout = [](int, int) { return false; };
    // The backward operation of a layer of this kind can add into a gradient buffer instead of
    // overwriting it (a later contribution is then `accumulate`, not `write_then_add`).
    std::function<bool(hb_layer_kind)> adds_in_place = [](hb_layer_kind kind) {
        return kind == HB_LAYER_MSE_LOSS;
    };
};

namespace detail {

// A value sharing a gradient buffer: it needs the buffer to hold its gradient from `join` (its
// first contribution) until `read` (its producer's backward step); `mods` are the steps at which
// it changes the buffer.
struct BufferMember {
    int join = 0, read = 0;
    std::vector<int> mods;
};

inline bool modifies_within(const BufferMember& writer, const BufferMember& reader) {
    for (int m : writer.mods)
        if (m > reader.join && m <= reader.read) return true;
    return false;
}

}  // namespace detail

// Every contribution to every gradient in backward order (later layers first, then by input
// slot): the first one writes the buffer, every later one adds to it.
inline GradientPlan plan_gradients(const Graph& graph, const Topology& t,
                                   const GradientRules& rules = {}) {
    const auto values = static_cast<size_t>(graph.num_values());
    GradientPlan plan;
    plan.buffer.assign(values, -1);
    plan.contributions.resize(graph.layers.size());
    auto layer_of = [&](int l) -> const Layer& { return graph.layers[static_cast<size_t>(l)]; };

    struct Pending {
        Use use;
        int step = 0;
    };
    std::vector<std::vector<Pending>> pending(values);
    for (size_t v = 0; v < values; ++v) {
        if (!t.has_gradient[v]) continue;
        for (const Use& u : t.uses[v])
            if (t.runs_backward[static_cast<size_t>(u.layer)])
                pending[v].push_back({u, backward_step(graph, u.layer)});
        std::stable_sort(pending[v].begin(), pending[v].end(),
                         [](const Pending& a, const Pending& b) { return a.step < b.step; });
    }
    std::vector<int> order;
    for (size_t v = 0; v < values; ++v)
        if (!pending[v].empty()) order.push_back(static_cast<int>(v));
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return pending[static_cast<size_t>(a)][0].step < pending[static_cast<size_t>(b)][0].step;
    });

    std::vector<std::vector<detail::BufferMember>> members;
    std::vector<Contribution> decided;
    for (int v : order) {
        const std::vector<Pending>& mine = pending[static_cast<size_t>(v)];
        detail::BufferMember self;
        self.join = mine[0].step;
        self.read = backward_step(graph, t.producer[static_cast<size_t>(v)]);
        for (size_t k = 1; k < mine.size(); ++k) self.mods.push_back(mine[k].step);

        const Use first = mine[0].use;
        const int sum = t.output[static_cast<size_t>(first.layer)];
        bool shared = false;
        if (layer_of(first.layer).kind == HB_LAYER_ADD && rules.same_layout(v, sum)) {
            const int candidate = plan.buffer[static_cast<size_t>(sum)];
            bool safe = candidate >= 0;
            if (safe)
                for (const detail::BufferMember& other : members[static_cast<size_t>(candidate)])
                    safe = safe && !detail::modifies_within(self, other) &&
                           !detail::modifies_within(other, self);
            if (safe) {
                plan.buffer[static_cast<size_t>(v)] = candidate;
                members[static_cast<size_t>(candidate)].push_back(self);
                shared = true;
            }
        }
        if (!shared) {
            plan.buffer[static_cast<size_t>(v)] = static_cast<int>(members.size());
            members.push_back({self});
        }

        for (size_t k = 0; k < mine.size(); ++k) {
            const Use u = mine[k].use;
            const hb_layer_kind kind = layer_of(u.layer).kind;
            Contribution c;
            c.layer = u.layer;
            c.slot = u.slot;
            c.value = v;
            if (kind == HB_LAYER_ADD) {
                c.from = t.output[static_cast<size_t>(u.layer)];
                c.delivery = k > 0 ? Delivery::add_from : shared ? Delivery::share : Delivery::copy;
            } else {
                c.delivery = k == 0                      ? Delivery::write
                             : rules.adds_in_place(kind) ? Delivery::accumulate
                                                         : Delivery::write_then_add;
            }
            decided.push_back(c);
        }
    }

    for (const auto& group : members) {
        GradientBuffer b{group[0].join, group[0].read};
        for (const detail::BufferMember& m : group) {
            b.first = std::min(b.first, m.join);
            b.last = std::max(b.last, m.read);
        }
        plan.buffers.push_back(b);
    }
    for (const Contribution& c : decided)
        plan.contributions[static_cast<size_t>(c.layer)].push_back(c);
    for (auto& list : plan.contributions)
        std::stable_sort(
            list.begin(), list.end(),
            [](const Contribution& a, const Contribution& b) { return a.slot < b.slot; });
    return plan;
}

}  // namespace hb
