// The model's and the optimizer's settings as JSON: the dump's index (data/dump.hpp), `harness
// info --json` and a worker's job (run/job_file.hpp) write them one way, and a job reads them back.
#pragma once

#include "hb/plugin.h"
#include "model/hourglass.hpp"

#include <nlohmann/json.hpp>

namespace harness::data {

nlohmann::json model_json(const model::HourglassSpec& m);
// Throws nlohmann::json::exception for a missing or ill-typed field.
model::HourglassSpec model_from_json(const nlohmann::json& j);

nlohmann::json optimizer_json(const hb_optimizer& o);
// Throws nlohmann::json::exception for a missing or ill-typed field.
hb_optimizer optimizer_from_json(const nlohmann::json& j);

}  // namespace harness::data
