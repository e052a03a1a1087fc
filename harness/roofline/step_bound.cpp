#include "roofline/step_bound.hpp"

#include <algorithm>

namespace harness::roofline {

Bound bound_of(const Cost& cost, const Ceilings& ceilings) {
    const double compute = double(cost.flops()) / ceilings.flops.best;
    const double memory = double(cost.bytes()) / ceilings.bytes.best;
    return {std::max(compute, memory), compute > memory};
}

double layers_bound_seconds(const model::Graph& graph, const std::vector<int>& layers,
                            const Ceilings& ceilings) {
    double seconds = 0;
    for (int l : layers)
        seconds +=
            bound_of(layer_cost(graph, graph.layers[static_cast<size_t>(l)]), ceilings).seconds;
    return seconds;
}

StepBound step_bound(const model::Graph& graph, bool weight_decay, bool momentum,
                     const Ceilings& ceilings) {
    StepBound step;
    const auto add = [&](const std::string& kind, const Cost& cost) {
        auto it = std::find_if(step.kinds.begin(), step.kinds.end(),
                               [&](const KindBound& k) { return k.kind == kind; });
        if (it == step.kinds.end()) {
            it = step.kinds.insert(step.kinds.end(), KindBound{});
            it->kind = kind;
        }
        const Bound b = bound_of(cost, ceilings);
        ++it->layers;
        it->cost += cost;
        it->seconds += b.seconds;
        if (b.compute_bound) it->compute_seconds += b.seconds;
        step.seconds += b.seconds;
    };
    for (const model::Layer& layer : graph.layers)
        add(model::to_string(layer.kind), layer_cost(graph, layer));
    add("rmsprop", optimizer_cost(graph, weight_decay, momentum));
    return step;
}

}  // namespace harness::roofline
