#pragma once

#include "config/config.hpp"

#include <stdexcept>
#include <string>
#include <vector>

namespace harness {

// A mistake on the command line: reported with exit code 2.
class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The config entries named in `names` (comma-separated; empty = all), in config order.
// Throws UsageError naming the unknown backend and the ones the config has.
std::vector<int> select_entries(const config::RunConfig& config, const std::string& names);

}  // namespace harness
