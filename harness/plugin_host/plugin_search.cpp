#include "plugin_host/plugin_search.hpp"

#include <boost/dll/runtime_symbol_info.hpp>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

namespace harness::plugin_host {

namespace fs = std::filesystem;

namespace {
constexpr const char* kPrefix = "hb_";
constexpr const char* kSuffix = ".so";
}  // namespace

std::vector<fs::path> plugin_search_path() {
    std::vector<fs::path> dirs;
    if (const char* env = std::getenv("HARNESS_PLUGIN_PATH")) {
        std::stringstream ss(env);
        std::string dir;
        while (std::getline(ss, dir, ':'))
            if (!dir.empty()) dirs.emplace_back(dir);
    }
    fs::path exe_dir = boost::dll::program_location().parent_path();
    dirs.push_back(exe_dir / "plugins");
    if (exe_dir.filename() == "bin")
        dirs.push_back(exe_dir.parent_path() / "lib" / "harness" / "plugins");
    return dirs;
}

std::string plugin_file_name(const std::string& plugin) {
    return kPrefix + plugin + kSuffix;
}

std::optional<fs::path> find_plugin(const std::string& plugin) {
    for (const auto& dir : plugin_search_path()) {
        fs::path candidate = dir / plugin_file_name(plugin);
        std::error_code ec;
        if (fs::is_regular_file(candidate, ec)) return candidate;
    }
    return std::nullopt;
}

std::optional<std::string> not_built_reason(const std::string& plugin) {
    for (const auto& dir : plugin_search_path()) {
        std::ifstream in(dir / (kPrefix + plugin + ".not-built"));
        std::string reason;
        if (in && std::getline(in, reason) && !reason.empty()) return reason;
    }
    return std::nullopt;
}

std::vector<fs::path> list_plugin_files() {
    std::map<std::string, fs::path> found;
    const std::string prefix = kPrefix, suffix = kSuffix;
    for (const auto& dir : plugin_search_path()) {
        std::error_code ec;
        for (const auto& entry : fs::directory_iterator(dir, ec)) {
            std::string file = entry.path().filename().string();
            if (file.size() <= prefix.size() + suffix.size() || file.rfind(prefix, 0) != 0 ||
                file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0)
                continue;
            found.emplace(file, entry.path());  // the first folder wins
        }
    }
    std::vector<fs::path> files;
    for (auto& kv : found) files.push_back(kv.second);
    return files;
}

std::string describe_search_path() {
    std::string s;
    for (const auto& dir : plugin_search_path()) s += (s.empty() ? "" : ":") + dir.string();
    return s;
}

}  // namespace harness::plugin_host
