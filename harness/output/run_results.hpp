// A run's results read back, each file once (docs/results-schema.md): its CSV's table and its JSON
// sidecar. `harness report`, `harness publish` and the charts read runs through here; a run CSV is
// told from the other CSVs of a results folder by is_run_csv (csv_reader.hpp).
#pragma once

#include "output/csv_reader.hpp"
#include "output/record.hpp"

#include <optional>
#include <string>
#include <vector>

namespace harness::output {

// What a sidecar records of a run: its config's name, every backend's run, samples included, and
// what the roofline needs (the ceilings and the step's cost; none in a sidecar without them).
struct SidecarRuns {
    std::string config_name;
    std::vector<BackendRun> runs;
    std::vector<Ceilings> ceilings;
    std::vector<KindCost> step_cost;
};

struct RunResults {
    std::string csv_path;
    std::string csv_text;  // the file's bytes, as the table was parsed from them
    CsvTable table;
    std::string sidecar_path;                 // sidecar_path(csv_path)
    std::optional<std::string> sidecar_text;  // none when no file lies there

    // The sidecar's config and runs; none without a sidecar. Throws std::runtime_error naming the
    // sidecar when it is not one (not JSON, or not a sidecar's shape).
    SidecarRuns sidecar_runs() const;
};

// Throws std::runtime_error naming the file and the line when the CSV cannot be read or parsed,
// or the sidecar cannot be read.
RunResults read_run_results(const std::string& csv_path);

}  // namespace harness::output
