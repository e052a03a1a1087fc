// The rounds model (docs/statistics.md, "The rounds model"): every backend of a run timed in the
// same rounds, each round's figure on the log scale as a backend's level plus the round's level
// plus noise of its own. What a round does to every backend alike (the machine's minute, a drift)
// is the round's level and leaves the ratios; the noise left over is pooled across the backends,
// so the interval of each ratio has the degrees of freedom of the whole run, not of its rounds.
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

namespace harness::output {

// One backend's figure in one round (ms, positive); `backend` and `round` are any small
// indices, the same index the same backend or round.
struct RoundCell {
    size_t backend = 0;
    size_t round = 0;
    double figure_ms = 0;
};

// A backend against the baseline in the model.
struct ModelRatio {
    double log_ratio = std::numeric_limits<double>::quiet_NaN();
    double log_standard_error = std::numeric_limits<double>::quiet_NaN();
    double degrees_of_freedom = 0;  // the residual's: every backend's and round's cells less
                                    // the levels fitted
};

// The least-squares fit of log(figure) = level[backend] + level[round] + noise over `cells`,
// and for each backend 0 .. backends - 1 its level less the baseline's with that difference's
// standard error, from the pooled residual variance. A backend without a cell, or whose
// difference the cells do not determine, has NaN; with no residual degree of freedom every
// standard error is NaN. No backend's variance is taken below `least_variance[backend]` (where
// given): what the spread of its steps alone leaves in a round's figure.
std::vector<ModelRatio> fit_round_model(const std::vector<RoundCell>& cells, size_t backends,
                                        size_t baseline,
                                        const std::vector<double>& least_variance = {});

}  // namespace harness::output
