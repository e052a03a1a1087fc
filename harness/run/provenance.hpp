// The machine and software a result was measured on, for every row (docs/design.md §8).
#pragma once

#include "config/config.hpp"
#include "output/record.hpp"

namespace harness::run {

output::Provenance collect_provenance(const config::RunConfig& config);

std::string utc_now_iso8601();  // 2026-11-29T14:34:26Z
std::string cpu_model();        // from /proc/cpuinfo, "unknown" when unreadable
// The first line of a file such as /proc/loadavg, without surrounding blanks; "" when unreadable.
std::string first_line(const std::string& path);
// The driver version in /proc/driver/nvidia/version's "NVRM version" value ("NVIDIA UNIX Open
// Kernel Module for x86_64  580.159.04  Release Build ..."): its first dotted number, "" if none.
std::string nvidia_driver_version(const std::string& nvrm_version);

}  // namespace harness::run
