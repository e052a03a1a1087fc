// `harness list`: what every plugin on the search path says about itself. Each library is opened
// in a child process (`harness __describe`), so that one that crashes while loading is reported
// instead of taking the listing down.
#pragma once

#include "hb/options.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <vector>

namespace harness::plugin_host {

// In this process: {"file", "loaded": true, "name", "version", "abi_version", "description",
// "capabilities": [...], "libraries": {...}, "devices": [{"name", "description", "available",
// "reason"}], and where the plugin declares them (ABI 2.4) "options": [{"key", "type": "bool",
// "int" or "choice", "min", "max", "choices", "description"}]}, or {"file", "loaded": false,
// "error"} when the library cannot be used.
nlohmann::json describe_plugin_file(const std::filesystem::path& file);

// The same, in a child process (`harness __describe`), so that a library that crashes or hangs
// while loading is described as not loaded; what the library wrote to stderr meanwhile is its
// "log" (read_log), not the console's.
nlohmann::json describe_in_child(const std::filesystem::path& file, double timeout_s = 60);

// Every plugin on the search path, each described in its own child process.
nlohmann::json list_plugins(double timeout_s = 60);

// Whether a description lists `capability` ("host_placement", ...) among its capabilities.
bool announces(const nlohmann::json& description, const std::string& capability);

// The declared options of a description; none when it declares none.
std::optional<std::vector<hb::OptionSpec>> declared_options(const nlohmann::json& description);

}  // namespace harness::plugin_host
