// The harness's reading of a plugin's per-operation events (ABI 2.1): each event named by its IR
// layer and counted under an operation kind (docs/design.md §6 "Profiles"), and where a
// backend's trace goes.
#pragma once

#include "hb/plugin.h"
#include "model/graph.hpp"
#include "output/profile.hpp"

#include <string>
#include <vector>

namespace harness::run {

// How many steps to profile after the timed ones, and where the traces go.
struct Profiling {
    int steps = 0;          // 0: none
    std::string trace_dir;  // "": no trace files
};

// One of output::kOperationKinds: by the phase for the optimizer, reorders, transfers and loss
// work, otherwise by the kind of the layer (`layer` null for none) and, for a convolution, the
// phase.
std::string operation_kind(const model::Layer* layer, hb_phase phase);

// The operation kinds operation_kind gives a layer kind's work (model::to_string(LayerKind)), or
// the update's for "rmsprop"; none for a name it does not know.
std::vector<std::string> operation_kinds_of(const std::string& layer_kind);

// `event` with its layer named; throws std::runtime_error for a layer index outside the graph.
output::Operation operation_of(const hb_event& event, const model::Graph& graph);

// DIR/<config>.<backend>.json, with every character outside [A-Za-z0-9_.-] written as '_'.
std::string trace_path(const std::string& dir, const std::string& config,
                       const std::string& backend);

}  // namespace harness::run
