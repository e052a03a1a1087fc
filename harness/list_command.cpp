#include "commands.hpp"

#include "output/run_json.hpp"
#include "plugin_host/library_output.hpp"
#include "plugin_host/plugin_listing.hpp"
#include "plugin_host/plugin_search.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>

namespace harness {

namespace {

void print_plugin(const nlohmann::json& p) {
    if (!p.value("loaded", false)) {
        std::cout << fmt::format("{}\n  failed to load: {}\n", p["file"].get<std::string>(),
                                 p["error"].get<std::string>());
        std::cout << plugin_host::log_tail_for_console(p.value("log", ""),
                                                       plugin_host::kFailureLogLines, "  ");
        return;
    }
    std::cout << fmt::format("{} {} (ABI {})  {}\n", p["name"].get<std::string>(),
                             p["version"].get<std::string>(), p["abi_version"].get<std::string>(),
                             p["file"].get<std::string>());
    if (!p["description"].get<std::string>().empty())
        std::cout << "  " << p["description"].get<std::string>() << "\n";
    std::string libraries;
    for (const auto& [name, version] : p["libraries"].items())
        libraries += (libraries.empty() ? "" : ", ") + name + " " + version.get<std::string>();
    if (!libraries.empty()) std::cout << "  libraries: " << libraries << "\n";
    std::string capabilities;
    for (const auto& c : p["capabilities"])
        capabilities += (capabilities.empty() ? "" : ", ") + c.get<std::string>();
    if (!capabilities.empty()) std::cout << "  capabilities: " << capabilities << "\n";
    if (const auto specs = plugin_host::declared_options(p)) {
        std::string options;
        for (const auto& s : *specs) {
            std::string values = "true|false";
            if (s.type == HB_OPTION_INT) values = fmt::format("{}..{}", s.min, s.max);
            if (s.type == HB_OPTION_CHOICE) values = fmt::format("{}", fmt::join(s.choices, "|"));
            if (!s.default_value.empty()) values += "; default " + s.default_value;
            if (s.effect == HB_OPTION_CHANGES_TIMING) values += "; timing only";
            if (!s.checked_on.empty()) values += "; checked on " + s.checked_on;
            options += (options.empty() ? "" : ", ") + s.key + " (" + values + ")";
        }
        std::cout << "  options: " << (options.empty() ? "none" : options) << "\n";
    }
    for (const auto& d : p["devices"]) {
        if (d["available"].get<bool>())
            std::cout << fmt::format("  device {:<8} available    {}\n",
                                     d["name"].get<std::string>(),
                                     d["description"].get<std::string>());
        else
            std::cout << fmt::format("  device {:<8} unavailable: {}\n",
                                     d["name"].get<std::string>(), d["reason"].get<std::string>());
    }
}

}  // namespace

int list_command(bool json) {
    nlohmann::json plugins;
    try {
        plugins = plugin_host::list_plugins();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "harness list: %s\n", e.what());
        return kExitBackendFailed;
    }
    if (json) {
        std::cout << output::json_text(
                         nlohmann::json{{"search_path", plugin_host::describe_search_path()},
                                        {"plugins", plugins}},
                         2)
                  << "\n";
        return kExitOk;
    }
    if (plugins.empty())
        std::cout << "no plugins found in " << plugin_host::describe_search_path() << "\n";
    for (const auto& p : plugins) print_plugin(p);
    return kExitOk;
}

}  // namespace harness
