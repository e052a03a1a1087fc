// A pipe between the harness and a worker (close-on-exec at both ends; the worker's end is
// handed down by ChildProcess): the worker's step events come up one (run/step_events.hpp), the
// harness's word to take a timed step goes down another (run/live_worker.hpp).
#pragma once

#include "run/step_events.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace harness::run {

class EventPipe {
public:
    EventPipe() {
        if (pipe2(fds_, O_CLOEXEC) != 0) fds_[0] = fds_[1] = -1;
    }
    ~EventPipe() {
        for (int fd : fds_)
            if (fd >= 0) close(fd);
    }
    EventPipe(const EventPipe&) = delete;
    EventPipe& operator=(const EventPipe&) = delete;
    bool open() const { return fds_[0] >= 0; }
    int read_fd() const { return fds_[0]; }
    int write_fd() const { return fds_[1]; }
    void close_read() { close_end(0); }
    void close_write() { close_end(1); }
    // Reads what is there and hands each whole line to `on_event`; false at the end of the pipe.
    template <typename OnEvent>
    bool read_events(const OnEvent& on_event) {
        char buffer[4096];
        const ssize_t got = read(fds_[0], buffer, sizeof buffer);
        if (got <= 0) return got < 0 && errno == EINTR;
        pending_.append(buffer, static_cast<size_t>(got));
        for (size_t end; (end = pending_.find('\n')) != std::string::npos;) {
            if (auto event = parse_step_event(pending_.substr(0, end))) on_event(*event);
            pending_.erase(0, end + 1);
        }
        return true;
    }

private:
    void close_end(int end) {
        if (fds_[end] >= 0) close(fds_[end]);
        fds_[end] = -1;
    }
    int fds_[2];
    std::string pending_;
};

}  // namespace harness::run
