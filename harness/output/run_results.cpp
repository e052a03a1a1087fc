#include "output/run_results.hpp"

#include "output/run_json.hpp"
#include "output/sidecar_path.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <stdexcept>

namespace harness::output {

SidecarRuns RunResults::sidecar_runs() const {
    SidecarRuns out;
    if (!sidecar_text) return out;
    try {
        const nlohmann::json j = nlohmann::json::parse(*sidecar_text);
        const nlohmann::json& provenance = j.at("provenance");
        out.config_name = provenance.value("config_name", "");
        for (const auto& c : provenance.value("ceilings", nlohmann::json::array()))
            out.ceilings.push_back(ceilings_from_json(c));
        for (const auto& k : provenance.value("step_cost", nlohmann::json::array()))
            out.step_cost.push_back(kind_cost_from_json(k));
        for (const auto& r : j.at("runs")) out.runs.push_back(backend_run_from_json(r));
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(sidecar_path + ": not a results sidecar: " + e.what());
    }
    return out;
}

RunResults read_run_results(const std::string& csv_path) {
    RunResults results;
    results.csv_path = csv_path;
    results.csv_text = read_text(csv_path);
    results.table = csv_table_of(results.csv_text, csv_path);
    results.sidecar_path = sidecar_path(csv_path);
    std::error_code ec;
    if (std::filesystem::exists(results.sidecar_path, ec))
        results.sidecar_text = read_text(results.sidecar_path);
    return results;
}

}  // namespace harness::output
