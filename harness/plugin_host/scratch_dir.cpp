#include "plugin_host/scratch_dir.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace harness::plugin_host {

namespace fs = std::filesystem;

namespace {

constexpr const char* kOwner = ".owner";

// Whether the folder's .owner file is there and its lock free: no living process holds it.
bool owner_gone(const fs::path& folder) {
    const int fd = open((folder / kOwner).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return false;  // not a scratch folder, or one whose owner is making it
    const bool gone = flock(fd, LOCK_EX | LOCK_NB) == 0;
    close(fd);
    return gone;
}

}  // namespace

int remove_stale_scratch(const fs::path& temp) {
    int removed = 0;
    std::error_code ec;
    for (fs::directory_iterator it(temp, ec), end; !ec && it != end; it.increment(ec)) {
        const fs::path folder = it->path();
        std::error_code type_error;
        if (folder.filename().string().rfind("harness", 0) != 0 ||
            !it->is_directory(type_error) || it->is_symlink(type_error) || !owner_gone(folder))
            continue;
        std::error_code remove_error;
        fs::remove_all(folder, remove_error);
        if (!remove_error) ++removed;
    }
    return removed;
}

ScratchDir::ScratchDir(const std::string& prefix) {
    const fs::path temp = fs::temp_directory_path();
    remove_stale_scratch(temp);
    std::string pattern = (temp / (prefix + "-XXXXXX")).string();
    if (!mkdtemp(pattern.data()))
        throw std::runtime_error("cannot create a temporary folder " + pattern + ": " +
                                 std::strerror(errno));
    path_ = pattern;
    // Locked under another name, then renamed: a .owner that another command can see is locked.
    const fs::path unlocked = path_ / ".owner-new";
    owner_fd_ = open(unlocked.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (owner_fd_ < 0 || flock(owner_fd_, LOCK_EX) != 0 ||
        rename(unlocked.c_str(), (path_ / kOwner).c_str()) != 0) {
        const std::string reason = std::strerror(errno);
        if (owner_fd_ >= 0) close(owner_fd_);
        std::error_code ec;
        fs::remove_all(path_, ec);
        throw std::runtime_error("cannot lock the temporary folder " + path_.string() + ": " +
                                 reason);
    }
}

ScratchDir::~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
    close(owner_fd_);
}

}  // namespace harness::plugin_host
