#include "commands.hpp"

#include "output/atomic_file.hpp"
#include "output/run_json.hpp"
#include "plugin_host/library_output.hpp"
#include "plugin_host/plugin_listing.hpp"

#include <cstdio>

namespace harness {

int describe_command(const std::string& plugin_file, const std::string& result) {
    try {
        // What the library writes to stderr while it loads (TensorFlow's log lines) is kept in
        // the description's "log", not shown on the console of `harness list`.
        nlohmann::json description;
        {
            const plugin_host::LibraryOutput quiet(plugin_host::log_path_of(result));
            description = plugin_host::describe_plugin_file(plugin_file);
        }
        output::write_file_atomically(result, output::json_text(description));
        return kExitOk;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "harness __describe: %s\n", e.what());
        return kExitOutputFailed;
    }
}

}  // namespace harness
