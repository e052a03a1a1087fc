#include "output/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace harness::output {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path, int err) {
    throw std::runtime_error("cannot write " + path + " (" + what + "): " + std::strerror(err));
}

// Makes the rename itself durable; a failure here loses nothing already visible, so it is ignored.
void sync_directory(const fs::path& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd < 0) return;
    ::fsync(fd);
    ::close(fd);
}

// Returns 0 or the errno of the first failure.
int write_and_sync(const std::string& tmp, const std::string& contents) {
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (f == nullptr) return errno;
    errno = 0;
    const size_t written = std::fwrite(contents.data(), 1, contents.size(), f);
    int err = 0;
    if (written != contents.size()) err = errno != 0 ? errno : EIO;
    if (err == 0 && std::fflush(f) != 0) err = errno;
    if (err == 0 && ::fsync(::fileno(f)) != 0) err = errno;
    if (std::fclose(f) != 0 && err == 0) err = errno;
    return err;
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& contents) {
    const fs::path target(path);
    fs::path dir = target.parent_path();
    if (dir.empty()) dir = ".";

    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
        throw std::runtime_error("cannot write " + path + " (creating directory " + dir.string() +
                                 "): " + ec.message());
    }

    const fs::path tmp =
        dir / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()));
    try {
        if (const int err = write_and_sync(tmp.string(), contents); err != 0) {
            fail("temporary file " + tmp.string(), path, err);
        }
        if (std::rename(tmp.c_str(), target.c_str()) != 0) fail("rename", path, errno);
    } catch (...) {
        std::remove(tmp.c_str());
        throw;
    }
    sync_directory(dir);
}

}  // namespace harness::output
