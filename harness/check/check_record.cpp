#include "check/check_record.hpp"

#include "results/atomic_file.hpp"
#include "results/run_json.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace harness::check {

std::string verdicts_path(const config::RunConfig& config) {
    return "runs/checks/" + config.name + "-" + config.sha256.substr(0, 16) + ".json";
}

std::vector<Verdict> read_verdicts(const std::string& path) {
    std::vector<Verdict> verdicts;
    std::ifstream in(path);
    if (!in) return verdicts;
    auto j = nlohmann::json::parse(in, nullptr, false);
    if (!j.is_object() || !j.contains("verdicts")) return verdicts;
    for (const auto& v : j["verdicts"])
        verdicts.push_back({v.value("backend", ""), v.value("math_mode", ""),
                            v.value("verdict", ""), v.value("baseline", ""),
                            v.value("utc_time", "")});
    return verdicts;
}

std::optional<Verdict> find_verdict(const std::vector<Verdict>& verdicts,
                                    const std::string& backend, const std::string& math_mode) {
    for (const auto& v : verdicts)
        if (v.backend == backend && v.math_mode == math_mode) return v;
    return std::nullopt;
}

void record_verdicts(const std::string& path, const std::vector<Verdict>& verdicts) {
    std::vector<Verdict> all = read_verdicts(path);
    for (const auto& v : verdicts) {
        bool replaced = false;
        for (auto& old : all)
            if (old.backend == v.backend && old.math_mode == v.math_mode) {
                old = v;
                replaced = true;
            }
        if (!replaced) all.push_back(v);
    }
    nlohmann::json j = {{"verdicts", nlohmann::json::array()}};
    for (const auto& v : all)
        j["verdicts"].push_back({{"backend", v.backend},
                                 {"math_mode", v.math_mode},
                                 {"verdict", v.verdict},
                                 {"baseline", v.baseline},
                                 {"utc_time", v.utc_time}});
    results::write_file_atomically(path, results::json_text(j, 2) + "\n");
}

}  // namespace harness::check
