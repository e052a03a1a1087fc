// `harness publish`: the summary of a results folder and the index of the published runs; what
// may be published is run_validation.hpp's to say.
#pragma once

#include "output/csv_row.hpp"
#include "output/run_results.hpp"
#include "publish/run_validation.hpp"

#include <string>
#include <vector>

namespace harness::publish {

// The first line of a summary.md that `harness publish` wrote, and may therefore rewrite.
extern const char* const kSummaryMark;

// The summary of a results folder named `name`: the `harness report` of its runs (with the steps of
// their sidecars), under a title. Throws std::runtime_error naming a sidecar that is not one.
std::string summary_markdown(const std::string& name, const std::vector<output::RunResults>& runs);

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
                       const std::vector<output::CsvRow>& rows, const std::string& what,
                       bool unchecked);

// The heading of the index's table (results/README.md).
extern const char* const kIndexHeader;

// `index` (the text of the index, "" when there is none yet) with the entry's line in its table:
// replacing the line of the same folder and file, else after the table's last line. A new index
// gets a title and the table. Throws std::runtime_error when `index` has text but no such table.
std::string update_index(const std::string& index, const IndexEntry& entry);

}  // namespace harness::publish
