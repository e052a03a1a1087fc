#include "results/json_sidecar.hpp"

#include "results/atomic_file.hpp"
#include "results/run_json.hpp"

namespace harness::results {

using nlohmann::json;

void write_json(const std::string& path, const Provenance& provenance,
                const std::vector<BackendRun>& runs) {
    const json doc = {{"schema_version", kSchemaVersion},
                      {"provenance", to_json(provenance)},
                      {"runs", to_json(runs)}};
    // Plugin messages may hold invalid UTF-8; replace it rather than lose the whole file.
    write_file_atomically(path, doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
}

}  // namespace harness::results
