// Reading a results CSV back (docs/results-schema.md), for `harness report`.
#pragma once

#include "output/csv_row.hpp"

#include <string>
#include <vector>

namespace harness::output {

// Parses a CSV written by `harness run` (RFC 4180 quoting): one CsvRow per row, keyed by the
// header. Throws std::runtime_error naming the file and the line when it is unreadable or
// malformed.
std::vector<CsvRow> read_csv(const std::string& path);

// The same, with the header's columns in their order and the line each row starts on (a quoted
// field may hold line breaks, so a row's line is not its index plus 2).
struct CsvTable {
    std::vector<std::string> header;
    std::vector<CsvRow> rows;
    std::vector<size_t> lines;
};
CsvTable read_csv_table(const std::string& path);
// The same, of a CSV's text; `path` names it in messages.
CsvTable csv_table_of(const std::string& text, const std::string& path);

// A file's bytes. Throws std::runtime_error naming the file and why it cannot be read.
std::string read_text(const std::string& path);

// Whether the file is a results CSV of `harness run` (of any schema-1 layout), as opposed to the
// other CSVs a results folder may hold (harness layers', a benchmark's): its header, and the one
// rule that recognises one, run_header_problem (output/csv_reporter.hpp). False when unreadable.
bool is_run_csv(const std::string& path);

}  // namespace harness::output
