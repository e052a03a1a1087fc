#include "commands.hpp"

#include "results/atomic_file.hpp"
#include "results/run_json.hpp"
#include "run/plugin_listing.hpp"

#include <cstdio>

namespace harness {

int describe_command(const std::string& plugin_file, const std::string& result) {
    try {
        results::write_file_atomically(result,
                                       results::json_text(run::describe_plugin_file(plugin_file)));
        return kExitOk;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "harness __describe: %s\n", e.what());
        return kExitOutputFailed;
    }
}

}  // namespace harness
