#include "run/provenance.hpp"

#include "harness/version.hpp"
#include "run/environment.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace harness::run {

namespace {

std::string trim(const std::string& s) {
    auto b = s.find_first_not_of(" \t\r\n");
    auto e = s.find_last_not_of(" \t\r\n");
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// The value after "key:" on the first line of `path` that starts with key.
std::string field_of(const std::string& path, const std::string& key) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(key, 0) == 0) {
            auto colon = line.find(':');
            if (colon != std::string::npos) return trim(line.substr(colon + 1));
        }
    return "";
}

// The NVIDIA driver's own files: no dependency on CUDA or nvidia-smi in the harness.
void read_gpu(output::Provenance& p) {
    p.gpu_driver = nvidia_driver_version(field_of("/proc/driver/nvidia/version", "NVRM version"));
    std::error_code ec;
    for (const auto& gpu : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
        std::string model = field_of((gpu.path() / "information").string(), "Model");
        if (!model.empty()) {
            p.gpu_name = model;
            break;
        }
    }
}

}  // namespace

std::string nvidia_driver_version(const std::string& nvrm_version) {
    std::istringstream words(nvrm_version);
    std::string word;
    while (words >> word)
        if (std::isdigit(static_cast<unsigned char>(word[0])) &&
            word.find('.') != std::string::npos &&
            word.find_first_not_of("0123456789.") == std::string::npos)
            return word;
    return "";
}

std::string first_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return trim(line);
}

std::string utc_now_iso8601() {
    std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

std::string cpu_model() {
    std::string model = field_of("/proc/cpuinfo", "model name");
    return model.empty() ? "unknown" : model;
}

output::Provenance collect_provenance(const config::RunConfig& config) {
    output::Provenance p;
    p.utc_time = utc_now_iso8601();
    p.harness_version = kVersion;
    p.git_commit = kGitCommit;
    p.config_name = config.name;
    p.config_path = config.path;
    p.config_sha256 = config.sha256;
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) == 0) p.host = host;
    p.cpu_model = cpu_model();
    read_gpu(p);
    p.seed = config.seed;
    p.placement = config::to_string(config.placement);
    const bool gpu = std::any_of(config.backends.begin(), config.backends.end(),
                                 [](const config::BackendEntry& e) { return e.device != "cpu"; });
    p.environment = check_environment("/", gpu);
    return p;
}

}  // namespace harness::run
