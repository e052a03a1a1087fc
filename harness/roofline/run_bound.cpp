#include "roofline/run_bound.hpp"

#include "roofline/step_bound.hpp"

#include <map>

namespace harness::roofline {

void bound_runs(const model::Graph& graph, const hb_optimizer& optimizer,
                output::Provenance& provenance, std::vector<output::BackendRun>& runs) {
    std::map<int, double> bound_ms;  // by thread count
    for (output::BackendRun& run : runs) {
        if (run.status != output::Status::ok || run.device != "cpu" || run.parallel ||
            run.threads <= 0)
            continue;
        auto it = bound_ms.find(run.threads);
        if (it == bound_ms.end()) {
            const Ceilings ceilings = measure_ceilings(run.threads);
            provenance.ceilings.push_back(ceilings);
            const StepBound step =
                step_bound(graph, optimizer.weight_decay != 0, optimizer.momentum != 0, ceilings);
            if (provenance.step_cost.empty())
                for (const KindBound& k : step.kinds)
                    provenance.step_cost.push_back(
                        {k.kind, k.layers, k.cost.flops(), k.cost.bytes(), {}});
            it = bound_ms.emplace(run.threads, step.seconds * 1e3).first;
        }
        run.bound_ms = it->second;
    }
}

const output::Ceilings* ceilings_on(const output::Provenance& provenance, int threads) {
    for (const output::Ceilings& c : provenance.ceilings)
        if (c.threads == threads) return &c;
    return nullptr;
}

}  // namespace harness::roofline
