// `harness report`: result CSVs as a Markdown table that can be pasted into a README or an issue.
#pragma once

#include "output/csv_row.hpp"

#include <map>
#include <string>
#include <vector>

namespace harness::report {

struct ReportOptions {
    // The row the others are compared with: its name ("onednn", "onednn (2 ranks)"), or a
    // data-parallel run's backend, each rank count's row then the baseline at that count; empty =
    // none.
    std::string baseline;
    double attainable_gflops = 0;  // the machine's attainable rate; 0 = unknown
};

// The rows of one results file (one round) and every timed step of its runs, from its JSON
// sidecar.
// Every timed step of one backend run, from a run's JSON sidecar.
struct StepSamples {
    std::string config;
    std::string label;  // backend, device, math mode
    std::vector<double> ms;
    std::string backend;
    int round = 1;
};

struct ResultsFile {
    std::vector<output::CsvRow> rows;
    std::map<std::string, std::vector<double>> steps_ms;  // backend -> steps; none without sidecar
};

// A run CSV's rows and its sidecar's steps as its rounds, one ResultsFile each in the order they
// first appear: a run of several rounds compares as several files of one round do. Rows without
// a `round` (results from before rounds) are one round.
std::vector<ResultsFile> rounds_of(const std::vector<output::CsvRow>& rows,
                                   const std::vector<StepSamples>& samples);

// One line per row: backend, device, status, check, math, threads, median ms, IQR ms, CPU/wall (the
// worker's CPU time over the wall time), images/s, GFLOP/s, peak memory, losses; when
// `attainable_gflops` is set, the fraction of it each row achieves; when `baseline` names a backend
// with an ok row of the same config, how many times slower each row is than that baseline (the
// baseline's row of the same file, else the last one given), and where both runs' steps are known,
// with a 95% bootstrap interval, the Mann-Whitney p and "no significant difference" when the
// interval holds 1 (docs/statistics.md). Below the table, when a config has several rounds or there
// are several configs, each backend against the baseline over all rounds, and its geometric mean
// over the configs. The provenance (config, host, CPU, GPU, commit, time) is listed once per
// distinct value above the table.
std::string markdown_report(const std::vector<ResultsFile>& files, const ReportOptions& options);
// Rows whose steps are not known: ratios of medians without intervals.
std::string markdown_report(const std::vector<output::CsvRow>& rows, const ReportOptions& options);

}  // namespace harness::report
