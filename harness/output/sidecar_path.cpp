#include "output/sidecar_path.hpp"

#include <filesystem>

namespace harness::output {

std::string sidecar_path(const std::string& csv_path) {
    std::filesystem::path path(csv_path);
    if (path.extension() == ".json") return csv_path + ".json";
    return path.replace_extension(".json").string();
}

}  // namespace harness::output
