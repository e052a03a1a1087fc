// A run's CSV and JSON sidecar checked against the schema and each other before `harness publish`
// lets them join the published results (docs/results-schema.md, "What a published row promises").
#pragma once

#include "output/run_results.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace harness::publish {

struct PublishProblem {
    std::string message;     // names the file, the line and the column
    bool unchecked = false;  // only that an ok row has no passing check (--allow-unchecked)
};

// Everything that keeps a run's CSV and its sidecar from being published: none when both are as
// this schema version promises and agree.
std::vector<PublishProblem> validate_run(const output::RunResults& run);

// A run CSV's table as `harness run` writes it: its header and rows written again, with LF line
// ends and quotes only where a field needs them. For a run validate_run() passed, these are the
// bytes harness run wrote, whatever line ends the file has now.
std::string canonical_csv(const output::CsvTable& table);

// The run CSVs in the folders of `root` (results/) that hold a row of `table` (every cell the
// same), other than `destination`, where publishing it again is a no-op: a run is published once,
// under one name, and a row once.
std::vector<std::string> published_elsewhere(const output::CsvTable& table,
                                             const std::filesystem::path& root,
                                             const std::filesystem::path& destination);

}  // namespace harness::publish
