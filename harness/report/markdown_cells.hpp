// What the sections of `harness report` share: Markdown cells, the rows' timings and verdicts
// (docs/statistics.md).
#pragma once

#include "output/comparison_stats.hpp"
#include "report/markdown_report.hpp"

#include <string>
#include <vector>

namespace harness::report {

// A Markdown cell: a bare '|' escaped.
std::string cell(std::string s);

bool is_ok(const output::CsvRow& r);

// Every timed step of `row`'s run from its file's sidecar; none when not known.
const std::vector<double>* steps_of(const ResultsFile& file, const output::CsvRow& row);

// What a comparison's bootstrap draws from (docs/statistics.md): the config, the two backends and,
// for one round, the row's time.
std::string stream_of(const output::CsvRow& row, const std::string& baseline,
                      const std::string& round);

// "slower" when `interval` lies above `neutral` (1 for a ratio, 0 for a difference), "faster"
// when below, "no significant difference" when it holds it; "" when it is not known.
std::string verdict(const output::Interval& interval, double neutral);

}  // namespace harness::report
