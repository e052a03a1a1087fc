// The JSON form of a BackendRun and of a Provenance, both ways: how a worker process hands its
// result to the parent, and the runs and provenance of the JSON outputs (the sidecar, `harness run
// --json`). NaN and infinities travel as the strings "nan", "inf" and "-inf".
#pragma once

#include "output/record.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace harness::output {

nlohmann::json to_json(const BackendRun& run);
nlohmann::json to_json(const std::vector<BackendRun>& runs);  // an array, in order
BackendRun backend_run_from_json(const nlohmann::json& j);    // throws nlohmann::json::exception
nlohmann::json to_json(const Provenance& p);
Provenance provenance_from_json(const nlohmann::json& j);  // throws nlohmann::json::exception
// A machine's ceilings (docs/roofline.md): {"threads", "flops_per_s", "bytes_per_s"}, each rate
// with its best, median, worst, repetitions and how it was measured.
nlohmann::json to_json(const Ceilings& c);
Ceilings ceilings_from_json(const nlohmann::json& j);  // throws nlohmann::json::exception
// One layer kind's cost in a step: {"kind", "layers", "flops", "bytes", "operation_kinds"}.
nlohmann::json to_json(const KindCost& k);
KindCost kind_cost_from_json(const nlohmann::json& j);  // throws nlohmann::json::exception

// `j` as text (indented by `indent` spaces, or on one line when negative), every string valid
// UTF-8: bytes that are not (a plugin's message may hold any) become U+FFFD.
std::string json_text(const nlohmann::json& j, int indent = -1);

}  // namespace harness::output
