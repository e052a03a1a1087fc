// One run at a time per results file: a run holds an exclusive lock on `<path>.lock` for as long
// as it may write `path`, so that a second run aimed at the same file is refused instead of
// silently replacing the first one's rows.
#pragma once

#include <stdexcept>
#include <string>

namespace harness::output {

class OutputLock {
public:
    // Throws OutputBusy when another process holds the lock, std::runtime_error when the lock
    // file cannot be made.
    explicit OutputLock(const std::string& path);
    ~OutputLock();  // removes the lock file and releases the lock
    OutputLock(const OutputLock&) = delete;
    OutputLock& operator=(const OutputLock&) = delete;

private:
    std::string lock_path_;
    int fd_ = -1;
};

class OutputBusy : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

}  // namespace harness::output
