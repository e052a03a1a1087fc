// Runs the built `harness` executable as a user would, for the tests that check its behaviour
// from the outside (exit codes, messages, files written).
#pragma once

#include "test_paths.hpp"

#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace harness::testing {

struct CommandResult {
    int exit_code = -1;
    std::string output;  // stdout and stderr together
};

inline std::string harness_binary() {
    return std::string(HB_BINARY_DIR) + "/harness";
}

// The environment that points `harness` at the fake and defect plugins (tests/fake_plugins).
inline std::string fake_plugins_env() {
    return std::string("HARNESS_PLUGIN_PATH=") + HB_FAKE_PLUGIN_DIR;
}

enum class Stderr { captured, discarded };

// `environment` is prepended to the command line, e.g. "HARNESS_PLUGIN_PATH=/x ".
inline CommandResult run_harness(const std::string& arguments, const std::string& environment = "",
                                 Stderr stderr_mode = Stderr::captured) {
    const std::string command = environment + " " + harness_binary() + " " + arguments +
                                (stderr_mode == Stderr::captured ? " 2>&1" : " 2>/dev/null");
    CommandResult result;
    FILE* pipe = popen(command.c_str(), "r");
    if (!pipe) return result;
    std::array<char, 4096> buffer{};
    size_t n;
    while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
        result.output.append(buffer.data(), n);
    int status = pclose(pipe);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
}

// A fresh, empty folder under the system's temporary folder, removed at the end of the scope.
class TempDir {
public:
    TempDir() {
        std::string pattern = (std::filesystem::temp_directory_path() / "hb-test-XXXXXX").string();
        path_ = mkdtemp(pattern.data());
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    const std::filesystem::path& path() const { return path_; }
    std::string operator/(const std::string& name) const { return (path_ / name).string(); }

private:
    std::filesystem::path path_;
};

// A JSON file the harness wrote.
inline nlohmann::json read_json(const std::string& path) {
    std::ifstream in(path);
    return nlohmann::json::parse(in);
}

}  // namespace harness::testing
