// The private folder a command keeps its workers' results and logs in, under the system's
// temporary folder ($TMPDIR, else /tmp): removed with everything in it when the command ends, and,
// when the command could not remove it (killed by SIGKILL, or by the out-of-memory killer), by the
// next command that makes one.
#pragma once

#include <filesystem>
#include <string>

namespace harness::plugin_host {

class ScratchDir {
public:
    // Makes PREFIX-XXXXXX (every prefix begins with "harness") and holds a lock on its .owner file
    // for as long as this object lives, which the kernel releases however the process ends; first
    // removes the scratch folders whose owner's lock is free: their owner is gone.
    explicit ScratchDir(const std::string& prefix = "harness");
    ~ScratchDir();
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
    int owner_fd_ = -1;
};

// Removes the scratch folders in `temp` whose owner is gone; returns how many.
int remove_stale_scratch(const std::filesystem::path& temp);

}  // namespace harness::plugin_host
