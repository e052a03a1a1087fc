#include "topology.hpp"

#include <algorithm>

namespace onednn_backend {

Topology analyse(const Graph& graph, bool fuse) {
    const int layers = graph.num_layers();
    const int values = graph.num_values();
    Topology t;
    t.producer.assign(values, -1);
    t.fused_relu.assign(layers, -1);
    t.absorbed.assign(layers, false);
    t.output.assign(layers, -1);
    t.runs_backward.assign(layers, false);
    t.has_gradient.assign(values, false);
    t.is_loss.assign(values, false);

    t.uses = hb::uses_of(graph);
    for (const Layer& layer : graph.layers)
        if (layer.kind == HB_LAYER_MSE_LOSS) t.is_loss[layer.output] = true;
    if (fuse) {
        for (const auto& [batchnorm, relu] : hb::batchnorm_relu_pairs(graph, t.uses)) {
            t.fused_relu[batchnorm] = relu;
            t.absorbed[relu] = true;
        }
    }
    for (int l = 0; l < layers; ++l) {
        const Layer& layer = graph.layers[l];
        t.output[l] = t.fused_relu[l] >= 0 ? graph.layers[t.fused_relu[l]].output : layer.output;
        t.producer[layer.output] = l;
    }
    for (int l = 0; l < layers; ++l)
        if (t.fused_relu[l] >= 0) t.producer[t.output[l]] = l;

    for (int l = layers - 1; l >= 0; --l) {
        if (t.absorbed[l]) continue;
        const Layer& layer = graph.layers[l];
        t.runs_backward[l] = layer.kind == HB_LAYER_MSE_LOSS || t.has_gradient[t.output[l]];
        if (!t.runs_backward[l]) continue;
        for (int v : layer.inputs)
            if (v != graph.input) t.has_gradient[v] = true;
    }
    return t;
}

namespace {

enum class Source { primitive, kernel, passthrough };

Source source_of(hb_layer_kind kind) {
    if (kind == HB_LAYER_ADD) return Source::passthrough;
    if (kind == HB_LAYER_MSE_LOSS) return Source::kernel;
    return Source::primitive;
}

// A value sharing a gradient buffer: it needs the buffer to hold its gradient from `join` (its
// first contribution) until `read` (its producer's backward step); `mods` are the steps at which
// it changes the buffer.
struct Member {
    int join = 0, read = 0;
    std::vector<int> mods;
};

bool modifies_within(const Member& writer, const Member& reader) {
    for (int m : writer.mods)
        if (m > reader.join && m <= reader.read) return true;
    return false;
}

}  // namespace

GradientPlan plan_gradients(const Graph& graph, const Topology& t,
                            const std::function<bool(int, int)>& same_layout) {
    const int values = graph.num_values();
    GradientPlan plan;
    plan.buffer.assign(values, -1);
    plan.contributions.resize(graph.layers.size());

    // Every value's contributions in backward order (later layers first, then by input slot).
    struct Pending {
        Use use;
        int step = 0;
    };
    std::vector<std::vector<Pending>> pending(values);
    for (int v = 0; v < values; ++v) {
        if (!t.has_gradient[v]) continue;
        for (const Use& u : t.uses[v])
            if (t.runs_backward[u.layer]) pending[v].push_back({u, backward_step(graph, u.layer)});
        std::stable_sort(pending[v].begin(), pending[v].end(),
                         [](const Pending& a, const Pending& b) { return a.step < b.step; });
    }

    std::vector<int> order;
    for (int v = 0; v < values; ++v)
        if (!pending[v].empty()) order.push_back(v);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return pending[a][0].step < pending[b][0].step; });

    std::vector<std::vector<Member>> members;
    std::vector<Contribution> decided;
    for (int v : order) {
        Member self;
        self.join = pending[v][0].step;
        self.read = backward_step(graph, t.producer[v]);
        for (size_t k = 1; k < pending[v].size(); ++k) self.mods.push_back(pending[v][k].step);

        const Use first = pending[v][0].use;
        const Layer& first_layer = graph.layers[first.layer];
        const Source first_source = source_of(first_layer.kind);
        bool shared = false;
        if (first_source == Source::passthrough && same_layout(v, t.output[first.layer])) {
            const int candidate = plan.buffer[t.output[first.layer]];
            bool safe = candidate >= 0;
            for (const Member& other : safe ? members[candidate] : std::vector<Member>{})
                safe = safe && !modifies_within(self, other) && !modifies_within(other, self);
            if (safe) {
                plan.buffer[v] = candidate;
                members[candidate].push_back(self);
                shared = true;
            }
        }
        if (!shared) {
            plan.buffer[v] = static_cast<int>(members.size());
            members.push_back({self});
        }

        for (size_t k = 0; k < pending[v].size(); ++k) {
            const Use u = pending[v][k].use;
            Contribution c;
            c.layer = u.layer;
            c.slot = u.slot;
            c.value = v;
            const Source source = source_of(graph.layers[u.layer].kind);
            if (source == Source::passthrough) c.from = t.output[u.layer];
            if (k == 0) {
                c.delivery = source == Source::passthrough
                                 ? (shared ? Delivery::share : Delivery::copy)
                                 : Delivery::write;
            } else {
                c.delivery = source == Source::passthrough ? Delivery::add_from
                             : source == Source::kernel    ? Delivery::accumulate
                                                           : Delivery::write_then_add;
            }
            decided.push_back(c);
        }
    }

    for (const auto& group : members) {
        GradientBuffer b{group[0].join, group[0].read};
        for (const Member& m : group) {
            b.first = std::min(b.first, m.join);
            b.last = std::max(b.last, m.read);
        }
        plan.buffers.push_back(b);
    }
    for (const Contribution& c : decided) plan.contributions[c.layer].push_back(c);
    for (auto& list : plan.contributions)
        std::stable_sort(
            list.begin(), list.end(),
            [](const Contribution& a, const Contribution& b) { return a.slot < b.slot; });
    return plan;
}

}  // namespace onednn_backend
