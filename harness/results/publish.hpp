// `harness publish`: a run's CSV and JSON sidecar checked against the schema before they join the
// published results (docs/results-schema.md, "What a published row promises"), the summary of a
// results folder and the index of the published runs.
#pragma once

#include "results/csv_row.hpp"

#include <string>
#include <vector>

namespace harness::results {

struct PublishProblem {
    std::string message;     // names the file, the line and the column
    bool unchecked = false;  // only that an ok row has no passing check (--allow-unchecked)
};

// Everything that keeps `csv_path` and its sidecar (the same path with .json) from being
// published: none when both are as this schema version promises and agree.
std::vector<PublishProblem> validate_run(const std::string& csv_path);

// A results CSV of `harness run` whose header is this schema version's columns or an earlier
// version's (columns are only added at the end), as opposed to the other CSVs a results folder
// may hold (harness layers', a benchmark's).
bool is_run_csv(const std::string& csv_path);

// The first line of a summary.md that `harness publish` wrote, and may therefore rewrite.
extern const char* const kSummaryMark;

// The summary of a results folder named `name`: the `harness report` of `csv_paths` (with the
// steps of their sidecars), under a title. Throws std::runtime_error naming an unreadable file.
std::string summary_markdown(const std::string& name, const std::vector<std::string>& csv_paths);

// One published run's line in the index: its folder and file, its config and backends, the
// machines of its rows, and what it shows.
struct IndexEntry {
    std::string folder;  // the results folder's name, relative to the index
    std::string file;    // the CSV's name in it
    std::string config;
    std::string machine;
    std::string what;
};
// The entry of the rows of `file`, published in `folder`; `what` empty means the default
// sentence; `unchecked` adds that some ok rows have no passing check.
IndexEntry index_entry(const std::string& folder, const std::string& file,
                       const std::vector<CsvRow>& rows, const std::string& what, bool unchecked);

// The heading of the index's table (results/README.md).
extern const char* const kIndexHeader;

// `index` (the text of the index, "" when there is none yet) with the entry's line in its table:
// replacing the line of the same folder and file, else after the table's last line. A new index
// gets a title and the table. Throws std::runtime_error when `index` has text but no such table.
std::string update_index(const std::string& index, const IndexEntry& entry);

}  // namespace harness::results
