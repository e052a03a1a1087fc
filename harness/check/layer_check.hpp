// `harness check --layers` (docs/conformance.md "Layer by layer"): the check of each selected layer
// configuration of the model alone, with one layer's tolerances, and its worst errors by kind.
#pragma once

#include "check/check_runner.hpp"
#include "model/layer_units.hpp"

#include <string>
#include <vector>

namespace harness::check {

// One layer configuration's check: the whole check (run_check) on its graph alone.
struct UnitCheck {
    model::LayerUnit unit;
    CheckOutcome outcome;
};

struct LayerCheckOutcome {
    std::string layers;  // the expression that selected the configurations
    std::vector<UnitCheck> units;
    bool interrupted = false;  // stopped by SIGINT or SIGTERM: `units` are those checked so far
};

// One backend's worst over the configurations of one layer kind that it was checked on.
struct KindSummary {
    std::string kind, backend;
    int configurations = 0;  // of the kind, checked with this backend
    int skipped = 0;         // of these, skipped (plugin not built, device absent)
    int failed = 0;          // MISMATCH, FAILED, or captures that could not be compared
    Difference worst;        // the largest relative error over its tolerance; none compared: empty
    std::string worst_configuration;
};

// The indexes into `units` of the configurations whose names `regex` (POSIX extended) matches
// (model::NamePattern); an empty one selects every configuration. An invalid expression, or one
// that matches none, throws std::invalid_argument naming --layers.
std::vector<int> select_units(const std::vector<model::LayerUnit>& units, const std::string& regex);

// The check of each of the model's configurations `units` (indexes into model::layer_units), in
// turn, with `request`'s baseline, backends and steps.
LayerCheckOutcome run_layer_check(const config::RunConfig& config, CheckRequest request,
                                  const std::vector<int>& units, const std::string& layers);

// The backends checked, in the order they first appear.
std::vector<std::string> backends_of(const LayerCheckOutcome& outcome);

// Per layer kind (in the order kinds first appear) and backend.
std::vector<KindSummary> summarize_by_kind(const LayerCheckOutcome& outcome);

}  // namespace harness::check
