// Before anything runs: every option of the selected entries checked against what its plugin
// declares (ABI 2.4), each plugin described once in a child process (docs/failure-modes.md).
#pragma once

#include "config/config.hpp"

#include <vector>

namespace harness::plugin_host {

// Throws config::ConfigError at the place of the first unknown or ill-typed option, in config
// order. A plugin that is not found, cannot be loaded or declares no options is left to the run,
// which reports it (or whose session creation checks its options) as before.
void check_plugin_options(const config::RunConfig& config, const std::vector<int>& entries);

}  // namespace harness::plugin_host
