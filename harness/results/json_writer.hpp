// The JSON sidecar (raw samples, every step's loss, manifests) and the JSON form of a BackendRun,
// which is also how a worker process hands its result to the parent.
#pragma once

#include "results/record.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace harness::results {

nlohmann::json to_json(const BackendRun& run);
BackendRun backend_run_from_json(const nlohmann::json& j);  // throws nlohmann::json::exception
nlohmann::json to_json(const Provenance& p);

void write_json(const std::string& path, const Provenance& provenance,
                const std::vector<BackendRun>& runs);  // atomic, like write_csv

}  // namespace harness::results
