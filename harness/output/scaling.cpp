#include "output/scaling.hpp"

#include <limits>

namespace harness::output {

void fill_scaling_efficiency(std::vector<BackendRun>& runs) {
    auto finished = [](const BackendRun& r) {
        return r.parallel && r.status == Status::ok && !r.parallel->oversubscribed &&
               r.stats.median_ms > 0;
    };
    for (BackendRun& run : runs) {
        if (!run.parallel) continue;
        run.parallel->scaling_efficiency = std::numeric_limits<double>::quiet_NaN();
        if (!finished(run)) continue;
        for (const BackendRun& one : runs)
            if (one.backend == run.backend && one.round == run.round && finished(one) &&
                one.parallel->ranks == 1)
                run.parallel->scaling_efficiency = one.stats.median_ms / run.stats.median_ms;
    }
}

}  // namespace harness::output
