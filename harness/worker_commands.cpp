#include "commands.hpp"

#include "results/atomic_file.hpp"
#include "run/plugin_listing.hpp"
#include "run/worker.hpp"

#include <cstdio>

namespace harness {

int worker_command(const std::string& config, int index, int warmup, int iterations,
                   const std::string& result) {
    return run::worker_main(config, index, {warmup, iterations}, result);
}

int describe_command(const std::string& plugin_file, const std::string& result) {
    try {
        results::write_file_atomically(result, run::describe_plugin_file(plugin_file).dump());
        return kExitOk;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "harness __describe: %s\n", e.what());
        return kExitBackendFailed;
    }
}

}  // namespace harness
