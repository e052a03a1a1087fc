// The JSON sidecar of a results CSV (docs/results-schema.md): the provenance and every run whole,
// with its raw samples, every step's loss and the plugin's manifest.
#pragma once

#include "results/record.hpp"

#include <string>
#include <vector>

namespace harness::results {

// Writes the whole file atomically, like write_csv.
void write_json(const std::string& path, const Provenance& provenance,
                const std::vector<BackendRun>& runs);

}  // namespace harness::results
