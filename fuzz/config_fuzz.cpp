// Any bytes as a run config: a ConfigError (exit 2 with file, line and key) or a config, never a
// crash, a hang or another exception.
#include "config/config.hpp"
#include "fuzz_input.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = harness::fuzz::write_input("config.yaml", data, size);
    try {
        harness::config::load_config(path);
    } catch (const harness::config::ConfigError&) {
    } catch (const std::exception& e) {
        std::fprintf(stderr, "load_config threw something other than ConfigError: %s\n", e.what());
        std::abort();
    }
    return 0;
}
