// The bound the ceilings give a layer and a whole training step (docs/roofline.md): the time a
// layer needs at the least, max(its FLOPs / the FMA rate, its bytes / the bandwidth), and which
// ceiling binds; a step's bound is its layers' bounds and the update's, summed.
#pragma once

#include "model/graph.hpp"
#include "roofline/ceilings.hpp"
#include "roofline/layer_cost.hpp"

#include <string>
#include <vector>

namespace harness::roofline {

struct Bound {
    double seconds = 0;
    bool compute_bound = false;  // the FMA rate binds, else the bandwidth
};

// With the best of each ceiling.
Bound bound_of(const Cost& cost, const Ceilings& ceilings);

// The layers of one kind (or "rmsprop", the update), summed.
struct KindBound {
    std::string kind;
    int layers = 0;
    Cost cost;
    double seconds = 0;          // the sum of its layers' bounds
    double compute_seconds = 0;  // of which the FMA rate binds
    bool compute_bound() const { return compute_seconds * 2 > seconds; }
};

struct StepBound {
    std::vector<KindBound> kinds;  // in the order the kinds first occur, the update last
    double seconds = 0;
};

StepBound step_bound(const model::Graph& graph, bool weight_decay, bool momentum,
                     const Ceilings& ceilings);

// The bound of one occurrence of a layer configuration (model::LayerUnit::layers): its layers'.
double layers_bound_seconds(const model::Graph& graph, const std::vector<int>& layers,
                            const Ceilings& ceilings);

}  // namespace harness::roofline
