// `harness layers`' table (docs/layers.md): per layer configuration, its count in the model and
// each backend's time, phases and rate, with the ratio to the first backend; per backend, the sum
// of the parts against the measured whole step. Written to the console and as CSV.
#pragma once

#include "layers/layer_samples.hpp"
#include "output/comparison_stats.hpp"
#include "output/record.hpp"

#include <limits>
#include <map>
#include <string>
#include <vector>

namespace harness::layers {

// What one backend's worker measured.
struct BackendLayers {
    output::BackendRun whole;  // the whole step (status, samples) and the backend's provenance
    std::vector<UnitSamples> units;
    // Each configuration's roofline bound at the backend's threads, by name (docs/roofline.md);
    // none where the ceilings were not measured (whole.bound_ms is the step's).
    std::map<std::string, double> bound_ms;
};

struct LayerCell {
    size_t samples = 0;
    double median_ms = kUnknown, forward_ms = kUnknown, backward_ms = kUnknown;
    double gflops = kUnknown;
    double bound_ms = kUnknown;  // the configuration's roofline bound at the backend's threads
    std::string timed_by, error;
    output::Comparison vs_first;  // time over the first backend's (rounds == 0: not compared)
    static constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();
};

struct LayerRow {
    std::string unit, kind;
    int count = 0;
    int64_t training_flops = 0;
    std::vector<LayerCell> cells;  // one per backend, in order
};

// A backend's whole step against its parts: Σ count × median over every configuration.
struct PartsSum {
    double whole_ms = LayerCell::kUnknown;  // the median measured whole step
    double parts_ms = LayerCell::kUnknown;  // unknown unless every configuration was timed
    double bound_ms = LayerCell::kUnknown;  // the step's roofline bound
    output::Comparison whole_vs_first;
    double outside_ms() const { return whole_ms - parts_ms; }
};

struct LayerTable {
    std::string config;
    std::vector<std::string> backends;
    std::vector<LayerRow> rows;  // configurations in model order
    std::vector<PartsSum> sums;  // one per backend
    int configurations_in_model = 0;
};

// `configurations_in_model`: how many the model has (the sum needs all of them).
LayerTable make_layer_table(const std::string& config, const std::vector<BackendLayers>& backends,
                            int configurations_in_model);

std::string format_layer_table(const LayerTable& table);

// Every cell as a CSV row, then per backend its whole step, the sum of the parts and what lies
// outside them (`row`: layer, step, parts, outside), each with the provenance of the run.
std::string layer_csv(const output::Provenance& provenance,
                      const std::vector<BackendLayers>& backends, const LayerTable& table);
std::vector<std::string> layer_csv_columns();

}  // namespace harness::layers
