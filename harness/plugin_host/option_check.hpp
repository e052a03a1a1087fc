// Before anything runs: every selected entry checked against what its plugin declares, each plugin
// described once in a child process (docs/failure-modes.md): its options (ABI 2.4) and the
// capabilities the entry needs (placement: host needs HB_CAP_HOST_PLACEMENT); then each entry's
// options in force resolved, so that a worker is handed them.
#pragma once

#include "config/config.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace harness::plugin_host {

// Throws config::ConfigError at the place of the first unknown or ill-typed option, or of a
// placement the plugin cannot honour, in config order. A plugin that is not found or cannot be
// loaded is left to the run, which reports it; one that declares no options has them checked by
// its session as before. Each entry's options_in_force are its options and its plugin's declared
// defaults of those left unset; an option whose unset meaning no value says (threads) only when
// set. `described` holds descriptions already made, by plugin (none: not found).
void check_entries_against_plugins(
    config::RunConfig& config, const std::vector<int>& entries,
    std::map<std::string, std::optional<nlohmann::json>> described = {});

}  // namespace harness::plugin_host
