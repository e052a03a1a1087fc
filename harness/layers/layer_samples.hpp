// What `harness layers` measured of one layer configuration in one backend (docs/layers.md), and
// its JSON form, which a worker writes and the harness reads back.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace harness::layers {

struct UnitSamples {
    std::string name;  // model::LayerUnit::name
    std::string kind;
    int count = 0;               // occurrences in the model
    int64_t training_flops = 0;  // per step
    // What timed a step of the configuration: "events" (the plugin's own operations of the
    // configuration's layers), "phases" (its forward and backward times, probes and loss
    // included) or "step" (the whole step's wall time).
    std::string timed_by;
    std::vector<double> ms, forward_ms, backward_ms;  // every timed step; phases where known
    std::string error;                                // why there are no samples
};

nlohmann::json to_json(const std::vector<UnitSamples>& units);
std::vector<UnitSamples> units_from_json(const nlohmann::json& j);  // throws on a bad document

}  // namespace harness::layers
