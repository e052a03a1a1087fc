#include "output/output_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace harness::output {

OutputLock::OutputLock(const std::string& path) : lock_path_(path + ".lock") {
    fd_ = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
        throw std::runtime_error("cannot make the lock file " + lock_path_ + ": " +
                                 std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        const int error = errno;
        ::close(fd_);
        if (error == EWOULDBLOCK)
            throw OutputBusy("another run is writing " + path + " (it holds " + lock_path_ +
                             "); wait for it or choose another --output");
        throw std::runtime_error("cannot lock " + lock_path_ + ": " + std::strerror(error));
    }
}

OutputLock::~OutputLock() {
    ::unlink(lock_path_.c_str());
    ::close(fd_);
}

}  // namespace harness::output
