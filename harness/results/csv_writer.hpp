// The results CSV (docs/results-schema.md): one row per backend run, provenance in every row.
#pragma once

#include "results/record.hpp"

#include <string>
#include <vector>

namespace harness::results {

std::vector<std::string> csv_columns();
// Writes the whole file atomically (a temporary file in the same folder, then rename), so a reader
// never sees a partial CSV; the runner calls it again after each finished backend.
void write_csv(const std::string& path, const Provenance& provenance,
               const std::vector<BackendRun>& runs);

}  // namespace harness::results
