#include "parallel/communicator.hpp"

#include <boost/dll/runtime_symbol_info.hpp>

#include <dlfcn.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

namespace harness::parallel {

namespace fs = std::filesystem;

CommunicatorModule& load_communicator_module(const std::string& name) {
    static std::map<std::string, CommunicatorModule*> loaded;
    if (auto it = loaded.find(name); it != loaded.end()) return *it->second;
    const fs::path dir = boost::dll::program_location().parent_path() / "communicators";
    const fs::path file = dir / ("libhb_comm_" + name + ".so");
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) {
        std::ifstream in(dir / ("libhb_comm_" + name + ".not-built"));
        std::string reason;
        if (!in || !std::getline(in, reason) || reason.empty())
            reason = "it is not built on this machine";
        throw std::runtime_error("communicator " + name + " unavailable (no " + file.string() +
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
