// `harness check`: the baseline (by default the float64 oracle), the rounding-noise ensemble and
// every selected backend run K steps from the same weights and data, each in its own worker
// process; their captures are compared tensor by tensor.
#pragma once

#include "check/comparison.hpp"
#include "check/rank_check.hpp"
#include "config/config.hpp"
#include "output/record.hpp"
#include "run/worker_launch.hpp"

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace harness::check {

// The default baseline: the reference plugin in float64 (unless a config entry has this name).
inline const std::string kOracle = "reference-fp64";
// Members of the rounding-noise ensemble (docs/conformance.md "How many members"): the first
// kFirstMembers measure the spread; a backend they do not hold meets one more at a time, up to
// kEnsembleSize, each a correct outcome it may be near (compare_growing): its verdict is the one
// all kEnsembleSize give, at the cost of kFirstMembers for a backend that passes with them.
constexpr int kFirstMembers = 6;
constexpr int kEnsembleSize = 24;

// The reference plugin's options of member `m` (from 0) of the ensemble at `bits` significand
// bits: its own seed of random rounding (plugins/reference/random_rounding.hpp).
std::map<std::string, std::string> ensemble_member_options(int m, int bits);

struct CheckRequest {
    std::string config_path;
    std::vector<int> entries;  // config entries to check (the baseline's own entry is skipped)
    // A config entry's name, kOracle, or else a plugin name (run on cpu with its defaults).
    std::string baseline = kOracle;
    int steps = 2;
    // Non-negative: check layer configuration `unit` of the model alone (model::layer_units,
    // model::unit_graph) with the tolerances of one layer (layer_tolerance_for), not the model.
    int unit = -1;
    // Where each capture's steps are shown while it runs (run/progress.hpp); none when null.
    run::ProgressLine* progress = nullptr;
};

struct BackendCheck {
    output::BackendRun run;  // status other than ok: the backend could not be checked
    Comparison comparison;   // meaningful when run.status == ok
};

struct CheckOutcome {
    output::BackendRun baseline;
    std::string baseline_problem;  // non-empty: nothing could be compared
    std::vector<BackendCheck> checks;
    // A config with `parallel`: each backend's data-parallel step against its one-process step.
    std::vector<RankCheck> rank_checks;
};

CheckOutcome run_check(const config::RunConfig& config, const CheckRequest& request);

// Runs `job` as a conformance capture of `steps` steps, no warm-up, into `dir` (the worker's
// tensors and its result); its steps on `progress` when given, under `label`, with
// `later_captures` more of the same size to come.
output::BackendRun run_capture(const config::RunConfig& config, run::WorkerJob job, int steps,
                               const std::filesystem::path& dir,
                               run::ProgressLine* progress = nullptr, const std::string& label = "",
                               int later_captures = 0);

}  // namespace harness::check
