// The small stacked hourglass of the cuDNN backend's host-side tests, and its plans.
#include "cudnn_small_hourglass.hpp"

#include "backend_comparison.hpp"
#include "model/hourglass.hpp"

#include <set>

namespace cudnn_host_test {

using namespace hb_cudnn;

Problem::Problem()
    : graph(harness::model::build_hourglass(harness::testing::small_hourglass())), abi(graph) {}

const Problem& problem() {
    static const Problem p;
    return p;
}

Plan plan_of(bool fused, Storage storage, bool input_gradient) {
    const hb_graph& g = *problem().abi.get();
    std::set<int> fuse;
    if (fused)
        for (int l : fusion_candidates(g)) fuse.insert(l);
    return Plan(g, fuse, storage, input_gradient);
}

StepCalls uniform_calls(const Plan& plan, const LayerCalls& layer) {
    StepCalls calls;
    calls.layers.assign(plan.layers().size(), layer);
    return calls;
}

}  // namespace cudnn_host_test
