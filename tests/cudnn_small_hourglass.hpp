// The small stacked hourglass that the cuDNN backend's host-side tests plan (cudnn_test,
// cudnn_profile_test), its plans, and the calls of a step whose layers all make the same ones.
#pragma once

#include "model/graph.hpp"
#include "operations.hpp"
#include "plan.hpp"

namespace cudnn_host_test {

// Two stacks of depth 2 (harness::testing::small_hourglass), as the graph and its C ABI form.
struct Problem {
    Problem();
    harness::model::Graph graph;
    harness::model::AbiGraph abi;
};

const Problem& problem();

// A plan with every fusion candidate fused, or none; with the input's gradient when asked.
hb_cudnn::Plan plan_of(bool fused, hb_cudnn::Storage storage = hb_cudnn::Storage::f32,
                       bool input_gradient = false);

// Every layer with the same calls.
hb_cudnn::StepCalls uniform_calls(const hb_cudnn::Plan& plan, const hb_cudnn::LayerCalls& layer);

}  // namespace cudnn_host_test
