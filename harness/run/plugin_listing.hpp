// `harness list`: what every plugin on the search path says about itself. Each library is opened
// in a child process (`harness __describe`), so that one that crashes while loading is reported
// instead of taking the listing down.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>

namespace harness::run {

// In this process: {"file", "loaded": true, "name", "version", "abi_version", "description",
// "capabilities": [...], "libraries": {...}, "devices": [{"name", "description", "available",
// "reason"}]}, or {"file", "loaded": false, "error"} when the library cannot be used.
nlohmann::json describe_plugin_file(const std::filesystem::path& file);

// Every plugin on the search path, each described in its own child process.
nlohmann::json list_plugins(double timeout_s = 60);

}  // namespace harness::run
