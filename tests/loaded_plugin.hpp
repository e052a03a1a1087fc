// A built plugin loaded with dlopen as the harness loads it (never closed, like the harness), for
// the tests that drive a backend through its C ABI, and the visible skip of a test whose device
// this machine does not have.
#pragma once

#include "hb/plugin.h"
#include "test_paths.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace harness::testing {

// The plugin file built here (HB_PLUGIN_DIR/`file`), or the one the environment variable
// `variable` names: a plugin built elsewhere, e.g. on a GPU machine that runs the test program
// built here (scripts/gpu-check.sh).
inline std::string plugin_path(const std::string& file, const char* variable) {
    const char* elsewhere = std::getenv(variable);
    return elsewhere ? elsewhere : std::string(HB_PLUGIN_DIR) + "/" + file;
}

inline const hb_plugin_api& load_plugin(const std::string& path) {
    void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library) throw std::runtime_error("cannot load " + path + ": " + dlerror());
    auto entry = reinterpret_cast<hb_plugin_entry_fn>(dlsym(library, HB_ENTRY_SYMBOL));
    if (!entry) throw std::runtime_error(path + " has no " HB_ENTRY_SYMBOL);
    return *entry();
}

inline const hb_plugin_info& describe(const hb_plugin_api& api) {
    const hb_plugin_info* info = nullptr;
    if (api.describe(&info) != HB_OK) throw std::runtime_error(api.last_error());
    return *info;
}

// Why the plugin cannot offer `device` here; empty when it can.
inline std::string unavailable_reason(const hb_plugin_api& api, const std::string& device) {
    const hb_plugin_info& info = describe(api);
    for (int32_t i = 0; i < info.num_devices; ++i)
        if (info.devices[i].name == device)
            return info.devices[i].available ? "" : info.devices[i].unavailable_reason;
    return "the plugin lists no " + device + " device";
}

}  // namespace harness::testing

// Skips the test, with the plugin's reason, when `api` cannot offer `device` on this machine.
#define HB_SKIP_WITHOUT_DEVICE(api, device)                                               \
    do {                                                                                  \
        const std::string reason = harness::testing::unavailable_reason((api), (device)); \
        if (!reason.empty()) {                                                            \
            GTEST_SKIP() << "no " << (device) << " here: " << reason;                     \
        }                                                                                 \
    } while (0)
