// The graph the oneDNN backend works on: the SDK's checked copy of hb_graph, and its topology.
#pragma once

#include "hb/graph.hpp"
#include "hb/topology.hpp"

namespace hb_onednn {

using hb::Dims;
using hb::Graph;
using hb::Layer;

using hb::Contribution;
using hb::Delivery;
using hb::GradientPlan;
using hb::Topology;
using hb::Use;

}  // namespace hb_onednn
