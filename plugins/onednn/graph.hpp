// The graph the oneDNN backend works on: the SDK's checked copy of hb_graph.
#pragma once

#include "hb/graph.hpp"

namespace onednn_backend {

using hb::Dims;
using hb::Graph;
using hb::Layer;

}  // namespace onednn_backend
