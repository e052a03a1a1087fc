// For CPU backends: how many logical processors there are, and how to describe the processor a
// session runs on, for the device list.
#pragma once

#include <algorithm>
#include <fstream>
#include <string>
#include <thread>

namespace hb {

// This machine's logical processors (hardware threads), at least 1.
inline int logical_processors() {
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// The processor's model name from /proc/cpuinfo ("CPU" where there is none) and its number of
// hardware threads, then `detail` when given: "AMD EPYC 9R14 (2 hardware threads, ISA avx2)".
inline std::string cpu_description(const std::string& detail = "") {
    std::string model = "CPU";
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);) {
        if (line.rfind("model name", 0) != 0) continue;
        const auto colon = line.find(':');
        if (colon != std::string::npos && colon + 2 <= line.size()) model = line.substr(colon + 2);
        break;
    }
    return model + " (" + std::to_string(logical_processors()) + " hardware threads" +
           (detail.empty() ? "" : ", " + detail) + ")";
}

}  // namespace hb
