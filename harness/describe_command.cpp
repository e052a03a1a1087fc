#include "commands.hpp"

#include "results/atomic_file.hpp"
#include "results/run_json.hpp"
#include "run/library_output.hpp"
#include "run/plugin_listing.hpp"

#include <cstdio>

namespace harness {

int describe_command(const std::string& plugin_file, const std::string& result) {
    try {
        // What the library writes to stderr while it loads (TensorFlow's log lines) is kept in
        // the description's "log", not shown on the console of `harness list`.
        nlohmann::json description;
        {
            const run::LibraryOutput quiet(run::log_path_of(result));
            description = run::describe_plugin_file(plugin_file);
        }
        results::write_file_atomically(result, results::json_text(description));
        return kExitOk;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "harness __describe: %s\n", e.what());
        return kExitOutputFailed;
    }
}

}  // namespace harness
