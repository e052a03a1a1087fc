#include "output/json_reporter.hpp"

#include "output/run_json.hpp"

namespace harness::output {

void JsonReporter::finalize(const std::vector<BackendRun>& runs) {
    const nlohmann::json doc = {{"provenance", to_json(provenance_)}, {"runs", to_json(runs)}};
    out_ << json_text(doc, 2) << "\n";
}

}  // namespace harness::output
