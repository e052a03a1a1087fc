#include "plugin_host/option_check.hpp"

#include "plugin_host/plugin_listing.hpp"
#include "plugin_host/plugin_search.hpp"

#include <map>
#include <optional>
#include <string>

namespace harness::plugin_host {

void check_entries_against_plugins(config::RunConfig& config, const std::vector<int>& entries,
                                   std::map<std::string, std::optional<nlohmann::json>> described) {
    for (int index : entries) {
        config::BackendEntry& entry = config.backends[static_cast<size_t>(index)];
        entry.options_in_force = entry.options;
        const bool host = entry.placement == HB_PLACEMENT_HOST;
        auto found = described.find(entry.plugin);
        if (found == described.end()) {
            std::optional<nlohmann::json> description;
            if (const auto file = find_plugin(entry.plugin)) description = describe_in_child(*file);
            found = described.emplace(entry.plugin, std::move(description)).first;
        }
        if (!found->second || !found->second->value("loaded", false)) continue;
        if (host && !announces(*found->second, "host_placement"))
            config::fail_at(config.path, entry.placement_place,
                            "the " + entry.plugin +
                                " plugin cannot take each step's batch from host memory (it does "
                                "not announce HB_CAP_HOST_PLACEMENT): give placement: device");
        const auto declared = declared_options(*found->second);
        if (!declared) continue;
        const std::vector<hb::OptionSpec>& specs = *declared;
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
        for (const hb::OptionSpec& spec : specs)
            if (!spec.default_value.empty())
                entry.options_in_force.emplace(spec.key, spec.default_value);
    }
}

}  // namespace harness::plugin_host
