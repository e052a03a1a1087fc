// The verdicts of `harness check`, kept so that `harness run` can say in every row whether that
// backend passed a check of the same config (same bytes) in the same math mode.
#pragma once

#include "config/config.hpp"

#include <optional>
#include <string>
#include <vector>

namespace harness::check {

struct Verdict {
    std::string backend;    // the config entry's name
    std::string math_mode;  // as the backend declared it
    std::string verdict;    // "pass" or "mismatch"
    std::string baseline;
    std::string utc_time;
};

// runs/checks/<config name>-<first 16 hex digits of its SHA-256>.json, under the working folder.
std::string verdicts_path(const config::RunConfig& config);

// Adds or replaces the verdicts (keyed by backend and math mode); written atomically.
void record_verdicts(const std::string& path, const std::vector<Verdict>& verdicts);
std::vector<Verdict> read_verdicts(const std::string& path);  // empty when there is no file
std::optional<Verdict> find_verdict(const std::vector<Verdict>& verdicts,
                                    const std::string& backend, const std::string& math_mode);

}  // namespace harness::check
