// `harness report`: result CSVs as a Markdown table that can be pasted into a README or an issue.
#pragma once

#include "results/csv_row.hpp"

#include <string>
#include <vector>

namespace harness::results {

struct ReportOptions {
    std::string baseline;          // backend name the others are compared with; empty = none
    double attainable_gflops = 0;  // the machine's attainable rate; 0 = unknown
};

// One line per row: backend, device, status, check, math, threads, median ms, IQR ms, images/s,
// GFLOP/s, peak memory, losses; when `attainable_gflops` is set, the fraction of it each row
// achieves; when `baseline` names a backend with an ok row of the same config, how many times
// slower each row is than that baseline. The provenance (config, host, CPU, GPU, commit, time) is
// listed once per distinct value above the table.
std::string markdown_report(const std::vector<CsvRow>& rows, const ReportOptions& options);

}  // namespace harness::results
