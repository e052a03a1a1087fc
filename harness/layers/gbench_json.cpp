#include "layers/gbench_json.hpp"

#include <regex>

namespace harness::layers {

nlohmann::json parse_gbench(const std::string& text) {
    static const std::regex not_a_number(R"((:\s*)-?nan\b)", std::regex::icase);
    static const std::regex infinite(R"((:\s*)-?inf\b)", std::regex::icase);
    return nlohmann::json::parse(
        std::regex_replace(std::regex_replace(text, not_a_number, "$010"), infinite, "$01null"));
}

bool is_backend_context_key(const std::string& key) {
    for (const char* prefix : {"backend", "plugin", "device", "library ", "option "})
        if (key.rfind(prefix, 0) == 0) return true;
    return false;
}

nlohmann::json merge_gbench(const std::vector<std::pair<std::string, nlohmann::json>>& backends) {
    nlohmann::json merged{{"context", nlohmann::json::object()},
                          {"benchmarks", nlohmann::json::array()}};
    std::string names;
    int64_t family_offset = 0;
    for (const auto& [backend, doc] : backends) {
        names += (names.empty() ? "" : ",") + backend;
        for (const auto& [key, value] : doc.at("context").items()) {
            if (is_backend_context_key(key))
                merged["context"][backend + " " + key] = value;
            else if (!merged["context"].contains(key))
                merged["context"][key] = value;
        }
        int64_t families = 0;
        for (nlohmann::json b : doc.at("benchmarks")) {
            b["name"] = backend + "/" + b.at("name").get<std::string>();
            if (b.contains("run_name"))
                b["run_name"] = backend + "/" + b["run_name"].get<std::string>();
            if (b.contains("family_index")) {
                const int64_t family = b["family_index"].get<int64_t>();
                families = std::max(families, family + 1);
                b["family_index"] = family + family_offset;
            }
            merged["benchmarks"].push_back(std::move(b));
        }
        family_offset += families;
    }
    merged["context"]["backends"] = names;
    return merged;
}

}  // namespace harness::layers
