// `harness check` on a config with `parallel` (docs/parallel.md): every backend's data-parallel
// step, every rank given the same batch, against its own one-process step. The averaged gradient
// of N equal gradients is that gradient, so every rank's gradients and state after K steps must
// equal each other's and the one-process run's, bit for bit where N is a power of two (the
// average is then exact) and within two float32 ulps elsewhere.
#pragma once

#include "config/config.hpp"
#include "output/record.hpp"

#include <string>
#include <vector>

namespace harness::check {

struct RankCheck {
    std::string backend;
    int ranks = 1;
    output::BackendRun run;  // of the data-parallel capture; status other than ok: not compared
    bool pass = false;
    int tensors = 0;     // tensors compared, over every rank
    std::string detail;  // the first difference, or what was compared
};

// Each of `entries` of the config at each of config.parallel.ranks, `steps` steps.
std::vector<RankCheck> run_rank_check(const config::RunConfig& config,
                                      const std::vector<int>& entries, int steps);

// The differences of two captures' tensors (folders of .npy files named by tensor, `which` of
// "gradient", "state"): "" when every element is within `ulps` float32 ulps (0: bit for bit),
// else the first tensor and element that is not. `tensors` counts those compared.
std::string capture_difference(const std::string& expected_dir, const std::string& actual_dir,
                               const std::vector<std::string>& names, int ulps, int& tensors);

}  // namespace harness::check
