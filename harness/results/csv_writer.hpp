// The results CSV (docs/results-schema.md): one row per backend run, provenance in every row.
#pragma once

#include "results/record.hpp"

#include <map>
#include <string>
#include <vector>

namespace harness::results {

inline constexpr int kSchemaVersion = 1;

std::vector<std::string> csv_columns();
// Writes the whole file atomically (a temporary file in the same folder, then rename), so a reader
// never sees a partial CSV; the runner calls it again after each finished backend.
void write_csv(const std::string& path, const Provenance& provenance,
               const std::vector<BackendRun>& runs);
// Parses a CSV written by write_csv (RFC 4180 quoting): one map column -> value per row.
std::vector<std::map<std::string, std::string>> read_csv(const std::string& path);

}  // namespace harness::results
