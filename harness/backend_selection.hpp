#pragma once

#include "config/config.hpp"

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace harness {

// A mistake on the command line: reported with exit code 2.
class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The config entries named in `names` (comma-separated; absent = all), in config order. Throws
// UsageError naming an unknown backend and the ones the config has, or when `names` names none
// (an empty --backends is an unset variable, not "all").
std::vector<int> select_entries(const config::RunConfig& config,
                                const std::optional<std::string>& names);

}  // namespace harness
