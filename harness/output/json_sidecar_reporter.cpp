#include "output/json_sidecar_reporter.hpp"

#include "output/run_json.hpp"

namespace harness::output {

using nlohmann::json;

std::string JsonSidecarReporter::contents(const Provenance& provenance,
                                          const std::vector<BackendRun>& runs) const {
    const json doc = {{"schema_version", kSchemaVersion},
                      {"provenance", to_json(provenance)},
                      {"runs", to_json(runs)}};
    // Plugin messages may hold invalid UTF-8; replace it rather than lose the whole file.
    return json_text(doc, 2) + "\n";
}

}  // namespace harness::output
