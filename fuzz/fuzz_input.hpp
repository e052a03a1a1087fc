// A fuzzer's input as a file: the readers under test take paths, as the harness's commands do.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

namespace harness::fuzz {

// A folder of this process's own, made once.
inline const std::string& scratch_dir() {
    static const std::string dir = [] {
        std::string path = "/tmp/hb-fuzz-" + std::to_string(::getpid());
        std::string command = "mkdir -p " + path;
        if (std::system(command.c_str()) != 0) std::abort();
        return path;
    }();
    return dir;
}

// Writes the input to DIR/name and returns the path.
inline std::string write_input(const std::string& name, const uint8_t* data, size_t size) {
    const std::string path = scratch_dir() + "/" + name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    return path;
}

}  // namespace harness::fuzz
