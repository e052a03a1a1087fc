// `harness report --explain` (docs/statistics.md, "What each change costs"): each entry against
// the base entry of its plugin and device, and what changing one thing costs.
#pragma once

#include "report/markdown_report.hpp"

#include <map>
#include <string>
#include <vector>

namespace harness::report {

// One thing an entry changes from its base: an option (its key), "placement" or "math_mode".
// An empty value is an option that is not set (the plugin's default).
struct Change {
    std::string what, base_value, value;
};
// "fuse_batchnorm_relu: (default) → false", "placement: device → host".
std::string to_string(const Change& change);

// The `options` column ("k=v;k=v") as a map.
std::map<std::string, std::string> options_of(const output::CsvRow& row);

// What `entry` changes from `base`, in this order: each option whose value differs (set in one
// and not in the other counts), the placement, then the math mode, only when no option differs
// (an option such as cudnn's `math` or libtorch's `tf32` that changes it is the change).
std::vector<Change> changes(const output::CsvRow& base, const output::CsvRow& entry);

// The base of each row: the first row of the same file with its config, plugin and device; a row
// that is its own base has none.
const output::CsvRow* base_of(const ResultsFile& file, const output::CsvRow& row);

// The "What each change costs" section. A base of another config than the first file's is paired
// with the first config's entry of the same name instead, the k-th file of its config with the
// k-th of the first (its change: "config: first → other", before any option that differs). Each
// entry that changes one thing from its base, with the
// base's and the entry's median ms, the cost in ms and in % of the base with their 95% bootstrap
// intervals (over every round given: each file is one), and "no significant difference" where the
// interval holds 0; then the entries that change several things or none, with what differs, and
// those without timings.
std::string explain_report(const std::vector<ResultsFile>& files);

}  // namespace harness::report
