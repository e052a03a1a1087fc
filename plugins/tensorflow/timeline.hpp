// A traced step's executed TensorFlow nodes as the ABI's per-operation events (docs/design.md §3
// "Profiling"): each node's phase from the part of the graph it was built in (the names
// TrainingStep gives) and its op type.
#pragma once

#include "hb/plugin.h"

#include <string>

namespace hb_tensorflow {

struct NodeEvent {
    std::string name;  // the op type, or the node's name when the trace has no type
    int layer = -1;
    hb_phase phase = HB_PHASE_OTHER;
    bool skip = false;  // the executor's own bookkeeping node (_SOURCE)
};

// `layer`: the IR layer the node was built for (TrainingStep::layer_of), or -1.
NodeEvent classify(const std::string& node_name, const std::string& op_type, int layer);

// The part of the graph a node belongs to: "forward", "backward", "update", "data" or "setup".
std::string part_of(const std::string& node_name);

}  // namespace hb_tensorflow
