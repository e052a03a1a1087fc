// The machine and software a result was measured on, for every row (DESIGN §8).
#pragma once

#include "config/config.hpp"
#include "results/record.hpp"

namespace harness::run {

results::Provenance collect_provenance(const config::RunConfig& config);

std::string utc_now_iso8601();  // 2026-11-29T14:34:26Z
std::string cpu_model();        // from /proc/cpuinfo, "unknown" when unreadable

}  // namespace harness::run
