// The results CSV (docs/results-schema.md): one row per backend run, provenance in every row.
#pragma once

#include "output/reporter.hpp"

#include <string>
#include <vector>

namespace harness::output {

// The CSV's columns, in order.
std::vector<std::string> csv_columns();
// A run's row, a cell per column of csv_columns().
std::vector<std::string> csv_row(const Provenance& provenance, const BackendRun& run);
// What keeps a CSV's header from being that of a `harness run` results CSV ("" when nothing): a
// `harness layers` CSV is named as such, anything else by the columns it lacks of those every
// schema-1 results CSV has (csv_columns() up to `last_loss`; the later ones were added at the end).
std::string run_header_problem(const std::vector<std::string>& header);

// The columns every results CSV starts with, `schema_version` .. `math_mode`: the invocation's
// provenance and the backend's identity; and a run's fields in them.
std::vector<std::string> identity_columns();
std::vector<std::string> identity_fields(const Provenance& provenance, const BackendRun& run);

// Milliseconds as the CSV writes them: four decimals.
std::string format_ms(double ms);

// Rewritten whole after every run (FileReporter).
class CsvReporter final : public FileReporter {
public:
    using FileReporter::FileReporter;

private:
    std::string contents(const Provenance& provenance,
                         const std::vector<BackendRun>& runs) const override;
};

}  // namespace harness::output
