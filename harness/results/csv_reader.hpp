// Reading a results CSV back (docs/results-schema.md), for `harness report`.
#pragma once

#include "results/csv_row.hpp"

#include <string>
#include <vector>

namespace harness::results {

// Parses a CSV written by `harness run` (RFC 4180 quoting): one CsvRow per row, keyed by the
// header. Throws std::runtime_error naming the file and the line when it is unreadable or
// malformed.
std::vector<CsvRow> read_csv(const std::string& path);

}  // namespace harness::results
