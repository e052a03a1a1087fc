// For CPU backends: how many logical processors there are, and how to describe the processor a
// session runs on, for the device list.
#pragma once

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>

namespace hb {

// This machine's logical processors (hardware threads), at least 1.
inline int logical_processors() {
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// The first processor's `key` in /proc/cpuinfo ("model name", "flags"), "" where there is none.
inline std::string cpuinfo_field(const std::string& key) {
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);) {
        if (line.rfind(key, 0) != 0 || line.find_first_not_of(" \t", key.size()) != line.find(':'))
            continue;
        const auto colon = line.find(':');
        return colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    }
    return "";
}

// The processor's features as the kernel names them ("avx512_vnni", "amx_tile").
inline std::set<std::string> cpu_flags() {
    std::istringstream words(cpuinfo_field("flags"));
    std::set<std::string> flags;
    for (std::string flag; words >> flag;) flags.insert(flag);
    return flags;
}

// The processor's model name ("CPU" where there is none) and its number of hardware threads,
// then `detail` when given: "AMD EPYC 9R14 (2 hardware threads, ISA avx2)".
inline std::string cpu_description(const std::string& detail = "") {
    std::string model = cpuinfo_field("model name");
    if (model.empty()) model = "CPU";
    return model + " (" + std::to_string(logical_processors()) + " hardware threads" +
           (detail.empty() ? "" : ", " + detail) + ")";
}

}  // namespace hb
