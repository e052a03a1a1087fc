// Where a results CSV's JSON sidecar lies (docs/results-schema.md): the CSV's path with `.json`,
// or with `.json` added where the CSV's own name already ends so, so the two never collide.
#pragma once

#include <string>

namespace harness::output {

std::string sidecar_path(const std::string& csv_path);

}  // namespace harness::output
