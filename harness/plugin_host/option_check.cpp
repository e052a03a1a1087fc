#include "plugin_host/option_check.hpp"

#include "plugin_host/plugin_listing.hpp"
#include "plugin_host/plugin_search.hpp"

#include <map>
#include <optional>
#include <string>

namespace harness::plugin_host {

void check_plugin_options(const config::RunConfig& config, const std::vector<int>& entries) {
    std::map<std::string, std::optional<std::vector<hb::OptionSpec>>> declared;  // by plugin
    for (int index : entries) {
        const config::BackendEntry& entry = config.backends[index];
        if (entry.options.empty()) continue;
        auto it = declared.find(entry.plugin);
        if (it == declared.end()) {
            std::optional<std::vector<hb::OptionSpec>> specs;
            if (const auto file = find_plugin(entry.plugin))
                specs = declared_options(describe_in_child(*file));
            it = declared.emplace(entry.plugin, std::move(specs)).first;
        }
        if (!it->second) continue;
        const std::vector<hb::OptionSpec>& specs = *it->second;
        for (const auto& [key, value] : entry.options) {
            const config::Place& place = entry.option_places.at(key);
            const hb::OptionSpec* spec = hb::find_option(specs, key);
            if (spec == nullptr) {
                const std::string retired = hb::retired_option(key, specs);
                if (!retired.empty())
                    config::fail_at(config.path, place,
                                    "the " + entry.plugin + " plugin's " + retired);
                std::vector<std::string> keys;
                for (const auto& s : specs) keys.push_back(s.key);
                const std::string best = config::near_miss(key, keys);
                config::fail_at(config.path, place,
                                "the " + entry.plugin + " plugin has no option '" + key + "' (" +
                                    (best.empty() ? "its options: " + hb::option_keys(specs)
                                                  : "did you mean '" + best + "'?") +
                                    ")");
            }
            const std::string problem = hb::option_problem(*spec, value);
            if (!problem.empty())
                config::fail_at(
                    config.path, place,
                    problem + " (" + entry.plugin + "'s " + key + ": " + spec->description + ")");
        }
    }
}

}  // namespace harness::plugin_host
