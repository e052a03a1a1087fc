#include "parallel/communicator.hpp"

#include <boost/dll/runtime_symbol_info.hpp>

#include <dlfcn.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <vector>

namespace harness::parallel {

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> communicator_dirs() {
    const fs::path exe_dir = boost::dll::program_location().parent_path();
    std::vector<fs::path> dirs{exe_dir / "communicators"};
    if (exe_dir.filename() == "bin")  // installed by `cmake --install`
        dirs.push_back(exe_dir.parent_path() / "lib" / "harness" / "communicators");
    return dirs;
}

}  // namespace

CommunicatorModule& load_communicator_module(const std::string& name) {
    static std::map<std::string, CommunicatorModule*> loaded;
    if (auto it = loaded.find(name); it != loaded.end()) return *it->second;
    const std::string file_name = "libhb_comm_" + name + ".so";
    const std::vector<fs::path> dirs = communicator_dirs();
    fs::path file;
    for (const auto& dir : dirs) {
        std::error_code ec;
        if (fs::is_regular_file(dir / file_name, ec)) {
            file = dir / file_name;
            break;
        }
    }
    if (file.empty()) {
        std::string reason, searched;
        for (const auto& dir : dirs) {
            searched += (searched.empty() ? "" : ", ") + (dir / file_name).string();
            std::ifstream in(dir / ("libhb_comm_" + name + ".not-built"));
            if (reason.empty() && in) std::getline(in, reason);
        }
        if (reason.empty()) reason = "it is not built on this machine";
        throw std::runtime_error("communicator " + name + " unavailable (no " + searched +
                                 "): " + reason);
    }
    // Never closed: MPI and NCCL keep threads of their own until the process exits.
    void* library = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        const char* error = dlerror();
        throw std::runtime_error("communicator " + name + ": cannot load " + file.string() + ": " +
                                 (error ? error : "unknown error"));
    }
    void* entry = dlsym(library, HB_COMMUNICATOR_ENTRY);
    if (!entry)
        throw std::runtime_error("communicator " + name + ": " + file.string() + " has no " +
                                 HB_COMMUNICATOR_ENTRY);
    auto* module = reinterpret_cast<CommunicatorModule* (*)()>(entry)();
    loaded[name] = module;
    return *module;
}

}  // namespace harness::parallel
