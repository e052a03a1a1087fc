#include "backend_selection.hpp"

#include <set>
#include <sstream>

namespace harness {

std::vector<int> select_entries(const config::RunConfig& config,
                                const std::optional<std::string>& names) {
    std::vector<int> entries;
    if (!names) {
        for (size_t i = 0; i < config.backends.size(); ++i) entries.push_back(static_cast<int>(i));
        return entries;
    }
    std::set<int> chosen;
    std::stringstream ss(*names);
    std::string name;
    while (std::getline(ss, name, ',')) {
        if (name.empty()) continue;
        bool found = false;
        for (size_t i = 0; i < config.backends.size(); ++i)
            if (config.backends[i].name == name) {
                found = true;
                chosen.insert(static_cast<int>(i));
            }
        if (!found) {
            std::string known;
            for (const auto& b : config.backends) known += (known.empty() ? "" : ", ") + b.name;
            throw UsageError("--backends: no backend '" + name + "' in " + config.path +
                             " (it has: " + known + ")");
        }
    }
    if (chosen.empty()) throw UsageError("--backends: no backend named (empty list)");
    return {chosen.begin(), chosen.end()};  // config order
}

}  // namespace harness
