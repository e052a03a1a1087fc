// A backend's profiled steps as a Chrome trace-event file (the JSON object format), which
// ui.perfetto.dev and chrome://tracing load: one process named after the backend, one thread per
// track (thread or stream), and on each track every step as a slice holding its phases, which hold
// their operations (docs/design.md §6 "Profiles").
#pragma once

#include "output/profile.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace harness::output {

// What the file says about where its events come from, under "metadata".
struct TraceMetadata {
    std::string config_name, config_path, config_sha256, harness_version;
    std::string backend, plugin, device, placement;
    std::map<std::string, std::string> options;
};

nlohmann::json chrome_trace(const TraceMetadata& metadata, const std::vector<ProfiledStep>& steps);

}  // namespace harness::output
