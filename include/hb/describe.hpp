// What a plugin's describe() returns, from what every plugin says: its name, what it is, the
// optional calls that work and its options; then its libraries and devices, the host's processor
// as cpu_device(). Header-only, standard library only.
#pragma once

#include "hb/cpu.hpp"
#include "hb/plugin.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hb {

// Every optional call of this ABI: what a backend that offers them all declares.
constexpr uint32_t kAllCapabilities = HB_CAP_GRADIENTS | HB_CAP_PHASE_TIMES | HB_CAP_PEAK_MEMORY |
                                      HB_CAP_HOST_PLACEMENT | HB_CAP_PROFILE |
                                      HB_CAP_DATA_PARALLEL | HB_CAP_INPUT_GRADIENT;

// What describe() returns before its libraries and devices are added: the plugin's name (pass
// HB_PLUGIN_NAME, the name it is built under), version 1.0.0, what it is, its HB_CAP_* flags and
// its options.
inline PluginInfo plugin_info(std::string name, std::string description, uint32_t capabilities,
                              std::vector<OptionSpec> options) {
    PluginInfo info;
    info.name = std::move(name);
    info.version = "1.0.0";
    info.description = std::move(description);
    info.capabilities = capabilities;
    info.options = std::move(options);
    return info;
}

// The host's processor as a device: "cpu", its model and threads, and what the backend adds
// (its instruction set, say).
inline DeviceInfo cpu_device(const std::string& detail = "") {
    DeviceInfo cpu;
    cpu.name = "cpu";
    cpu.description = cpu_description(detail);
    return cpu;
}

}  // namespace hb
