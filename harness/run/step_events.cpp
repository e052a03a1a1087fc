#include "run/step_events.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <sstream>

namespace harness::run {

namespace {
int g_fd = -1;
}

std::string to_line(const StepEvent& event) {
    std::ostringstream line;
    line << event.phase << ' ' << event.done << ' ' << event.total << ' ' << event.last_ms;
    return line.str();
}

std::optional<StepEvent> parse_step_event(const std::string& line) {
    std::istringstream in(line);
    StepEvent event;
    if (!(in >> event.phase >> event.done >> event.total >> event.last_ms)) return std::nullopt;
    std::string rest;
    if (in >> rest || event.done < 0 || event.total < 0) return std::nullopt;
    return event;
}

void open_step_events(int fd) {
    if (fd < 0) return;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    std::signal(SIGPIPE, SIG_IGN);  // a harness gone is no reason to die mid-step
    g_fd = fd;
}

void send_step_event(const StepEvent& event) {
    if (g_fd < 0) return;
    const std::string line = to_line(event) + "\n";
    // One write of a line shorter than PIPE_BUF arrives whole or not at all.
    ssize_t written = write(g_fd, line.data(), line.size());
    (void)written;
}

}  // namespace harness::run
