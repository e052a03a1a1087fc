// `harness report --charts`: gnuplot charts of result CSVs. Each chart is a data file and a
// gnuplot script beside the SVG it draws, so a reader can redraw or restyle it from the numbers.
#pragma once

#include "output/run_results.hpp"
#include "report/attribution_report.hpp"
#include "report/markdown_report.hpp"

#include <string>
#include <vector>

namespace harness::report {

struct Chart {
    std::string name;    // file stem: <name>.dat, <name>.gp, <name>.svg
    std::string title;   // also the Markdown image's alternative text
    std::string data;    // the contents of <name>.dat
    std::string script;  // the contents of <name>.gp, which reads <name>.dat and writes <name>.svg
};

// The runs of a result CSV's sidecar that have samples (output/run_results.hpp).
std::vector<StepSamples> step_samples(const output::SidecarRuns& sidecar);

// Per config: each ok row's median time per step with its p10-p90 range and its extremes (a
// logarithmic axis when the rows differ by more than 20x).
std::vector<Chart> step_time_charts(const std::vector<output::CsvRow>& rows);
// Per config: where each ok row's step goes, as the shares of its forward, backward and optimizer
// phase medians (rows whose backend reports no phases are left out).
std::vector<Chart> phase_charts(const std::vector<output::CsvRow>& rows);
// Per config: every timed step of every run in the order they ran, to show drift and outliers.
std::vector<Chart> sample_charts(const std::vector<StepSamples>& samples);
// Per config with profiles: each backend's profiled (traced) step as a bar of stacked operation
// kinds, each in its own colour, and the unaccounted rest, in milliseconds (rounds merged), with
// a dot at the median of its timed steps, which tracing lengthens.
std::vector<Chart> attribution_charts(const std::vector<ProfiledRun>& runs);

}  // namespace harness::report
