// A run of several rounds read per backend: each backend's runs, one per round, and its ratio to
// the baseline over the rounds (docs/statistics.md, "Rounds in one run" and "The rounds model").
// What `harness run`'s table prints and its stopping rule judges, and `harness report` prints for
// several files of one config.
#pragma once

#include "output/comparison_stats.hpp"
#include "output/record.hpp"

#include <string>
#include <utility>
#include <vector>

namespace harness::output {

// Each backend's runs (by row name), one per round, in the order the backends first ran.
using BackendRounds = std::vector<const BackendRun*>;
std::vector<BackendRounds> rounds_by_backend(const std::vector<BackendRun>& runs);

// One backend's timed steps in each round it ran ok: (round, steps), one entry a worker (a round
// may have several workers of one backend).
using StepsByRound = std::vector<std::pair<int, std::vector<double>>>;

// Every backend of `backends` against `backends[baseline]`: compare() over the rounds both ran
// (its one-round bootstrap, its difference in ms and Mann-Whitney's p), `streams[i]` naming
// backend i's comparison. Where a backend shares two rounds or more with the baseline, its ratio
// and interval are the rounds model's over every backend's rounds (round_model.hpp), each
// worker a cell of its own. compare()'s rounds pair a backend's round with the steps of every
// baseline worker of that round. The baseline's own entry is empty.
std::vector<Comparison> compare_over_rounds(const std::vector<StepsByRound>& backends,
                                            size_t baseline,
                                            const std::vector<std::string>& streams);

// compare_over_rounds of a run's backends, each round's `ok` runs; the streams are those `harness
// report` uses for the same comparison (config, backend, baseline), so that both print the same
// figures.
std::vector<Comparison> compare_rounds(const std::vector<BackendRounds>& backends, size_t baseline,
                                       const std::string& config_sha256);

// How far the interval reaches from the ratio, as a share of it: max(hi / ratio - 1,
// 1 - lo / ratio); infinite when the interval is not known.
double relative_half_width(const Comparison& comparison);

}  // namespace harness::output
