#include "check/check_record.hpp"

#include "hb/sha256.hpp"
#include "output/atomic_file.hpp"
#include "output/run_json.hpp"
#include "plugin_host/plugin_search.hpp"

#include <pwd.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace harness::check {

namespace fs = std::filesystem;

namespace {

std::string home_dir() {
    if (const char* home = std::getenv("HOME"); home && *home) return home;
    if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_dir) return pw->pw_dir;
    return "";
}

std::string short_sha(const std::string& sha) {
    return sha.empty() ? "none" : sha.substr(0, 12) + "...";
}

nlohmann::json identity_json(const BuildIdentity& b) {
    return {{"plugin_sha256", b.plugin_sha256},
            {"plugin_version", b.plugin_version},
            {"libraries", b.libraries}};
}

// A record written before verdicts carried a build reads as an empty identity, which matches no
// build: its verdicts are stale.
BuildIdentity identity_from(const nlohmann::json& v) {
    BuildIdentity b;
    b.plugin_sha256 = v.value("plugin_sha256", "");
    b.plugin_version = v.value("plugin_version", "");
    if (auto it = v.find("libraries"); it != v.end() && it->is_object())
        for (const auto& [name, version] : it->items())
            if (version.is_string()) b.libraries[name] = version.get<std::string>();
    return b;
}

}  // namespace

bool operator==(const BuildIdentity& a, const BuildIdentity& b) {
    return a.plugin_sha256 == b.plugin_sha256 && a.plugin_version == b.plugin_version &&
           a.libraries == b.libraries;
}

BuildIdentity build_identity(const std::string& plugin, const std::string& plugin_version,
                             const std::map<std::string, std::string>& libraries) {
    BuildIdentity b;
    if (auto path = plugin_host::find_plugin(plugin))
        b.plugin_sha256 = hb::file_sha256_hex(path->string()).value_or("");
    b.plugin_version = plugin_version;
    b.libraries = libraries;
    return b;
}

std::string identity_change(const std::string& plugin, const BuildIdentity& then,
                            const BuildIdentity& now) {
    std::string out;
    auto add = [&out](const std::string& what, const std::string& a, const std::string& b) {
        out += (out.empty() ? "" : "; ") + what + " (" + (a.empty() ? "none" : a) + " then, " +
               (b.empty() ? "none" : b) + " now)";
    };
    if (then.plugin_sha256 != now.plugin_sha256)
        add("the plugin file " + plugin_host::plugin_file_name(plugin),
            "SHA-256 " + short_sha(then.plugin_sha256), "SHA-256 " + short_sha(now.plugin_sha256));
    if (then.plugin_version != now.plugin_version)
        add("the plugin version", then.plugin_version, now.plugin_version);
    for (const auto& [name, version] : now.libraries) {
        auto it = then.libraries.find(name);
        const std::string old = it == then.libraries.end() ? "" : it->second;
        if (old != version) add("the library " + name, old, version);
    }
    for (const auto& [name, version] : then.libraries)
        if (!now.libraries.count(name)) add("the library " + name, version, "");
    return out;
}

std::string verdicts_dir() {
    fs::path cache;
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && fs::path(xdg).is_absolute())
        cache = xdg;
    else
        cache = fs::path(home_dir()) / ".cache";
    return (cache / "harness" / "checks").string();
}

std::string verdicts_path(const config::RunConfig& config) {
    return (fs::path(verdicts_dir()) / (config.name + "-" + config.sha256.substr(0, 16) + ".json"))
        .string();
}

std::vector<Verdict> read_verdicts(const std::string& path) {
    std::vector<Verdict> verdicts;
    std::ifstream in(path);
    if (!in) return verdicts;
    auto j = nlohmann::json::parse(in, nullptr, false);
    if (!j.is_object() || !j.contains("verdicts") || !j["verdicts"].is_array()) return verdicts;
    for (const auto& v : j["verdicts"]) {
        if (!v.is_object()) continue;
        verdicts.push_back({v.value("backend", ""), v.value("math_mode", ""),
                            v.value("verdict", ""), v.value("baseline", ""),
                            v.value("utc_time", ""), identity_from(v)});
    }
    return verdicts;
}

std::optional<Verdict> find_verdict(const std::vector<Verdict>& verdicts,
                                    const std::string& backend, const std::string& math_mode) {
    for (const auto& v : verdicts)
        if (v.backend == backend && v.math_mode == math_mode) return v;
    return std::nullopt;
}

std::string verdict_for(const Verdict& verdict, const BuildIdentity& now) {
    return verdict.build == now ? verdict.verdict : "stale";
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
    for (const auto& v : all) {
        nlohmann::json entry = {{"backend", v.backend},
                                {"math_mode", v.math_mode},
                                {"verdict", v.verdict},
                                {"baseline", v.baseline},
                                {"utc_time", v.utc_time}};
        entry.update(identity_json(v.build));
        j["verdicts"].push_back(entry);
    }
    output::write_file_atomically(path, output::json_text(j, 2) + "\n");
}

}  // namespace harness::check
