#include "plugin_host/child_process.hpp"

#include <boost/dll/runtime_symbol_info.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace harness::plugin_host {

namespace {

// How many times SIGINT, SIGTERM or SIGHUP came.
volatile sig_atomic_t g_interrupted = 0;

void on_interrupt(int) {
    if (g_interrupted < 2) g_interrupted = g_interrupted + 1;
}

constexpr auto kPollInterval = std::chrono::milliseconds(5);
constexpr double kGracePeriod_s = 3.0;
// An interrupted worker finishes the step in progress and writes the steps it completed: it may
// take a long step's time. A second interrupt ends it at once.
constexpr double kInterruptGracePeriod_s = 10.0;

}  // namespace

void install_interrupt_handler() {
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
    sigaction(SIGHUP, &action, nullptr);  // a closed terminal
}

bool interrupted() {
    return g_interrupted != 0;
}

std::string describe_signal(int signal) {
    const char* name = strsignal(signal);
    return "signal " + std::to_string(signal) + " (" + (name ? name : "unknown") + ")";
}

std::string own_executable() {
    if (access("/proc/self/exe", X_OK) == 0) return "/proc/self/exe";
    return boost::dll::program_location().string();
}

std::string find_executable(const std::string& name) {
    const char* path = std::getenv("PATH");
    std::string folders = path ? path : "";
    size_t start = 0;
    while (start <= folders.size()) {
        size_t end = folders.find(':', start);
        if (end == std::string::npos) end = folders.size();
        std::string candidate = end > start ? folders.substr(start, end - start) : ".";
        candidate += '/';
        candidate += name;
        std::error_code error;
        if (std::filesystem::is_regular_file(candidate, error) &&
            access(candidate.c_str(), X_OK) == 0)
            return candidate;
        start = end + 1;
    }
    return "";
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, int death_signal,
                           const std::vector<int>& keep_fds, const std::string& stderr_path) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);

    // The child tells why exec failed through this pipe; closed on a successful exec, it reads
    // empty.
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0)
        throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(errno));
    const pid_t parent = getpid();
    pid_ = fork();
    if (pid_ == 0) {
        // Only async-signal-safe calls until exec.
        close(report[0]);
        prctl(PR_SET_PDEATHSIG, death_signal);
        if (getppid() != parent) _exit(127);  // the harness died before the line above
        const int null = open("/dev/null", O_RDONLY);
        if (null >= 0 && null != STDIN_FILENO) {
            dup2(null, STDIN_FILENO);
            close(null);
        }
        if (!stderr_path.empty()) {
            const int log = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (log >= 0 && log != STDERR_FILENO) {
                dup2(log, STDERR_FILENO);
                close(log);
            }
        }
        for (int fd : keep_fds)
            if (fd >= 0) fcntl(fd, F_SETFD, 0);
        execve(args[0], args.data(), environ);
        const int error = errno;
        ssize_t written = write(report[1], &error, sizeof error);
        (void)written;
        _exit(127);
    }
    const int fork_error = errno;
    close(report[1]);
    if (pid_ < 0) {
        close(report[0]);
        pid_ = -1;
        throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(fork_error));
    }
    int error = 0;
    ssize_t got;
    do {
        got = read(report[0], &error, sizeof error);
    } while (got < 0 && errno == EINTR);
    close(report[0]);
    if (got == static_cast<ssize_t>(sizeof error)) {
        waitpid(pid_, nullptr, 0);
        pid_ = -1;
        throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(error));
    }
}

ChildProcess::~ChildProcess() {
    if (pid_ > 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
    }
}

void ChildProcess::send(int signal) {
    if (pid_ > 0) kill(pid_, signal);
}

void ChildProcess::terminate(double grace_s) {
    kill(pid_, SIGCONT);  // a stopped child must run to hear SIGTERM
    kill(pid_, SIGTERM);
    const sig_atomic_t interrupts = g_interrupted;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
    while (std::chrono::steady_clock::now() < deadline && g_interrupted == interrupts) {
        if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
            pid_ = -1;
            return;
        }
        std::this_thread::sleep_for(kPollInterval);
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
}

ExitInfo ChildProcess::wait(double timeout_s, int watch_fd,
                            const std::function<bool()>& on_readable,
                            const std::function<bool()>& until) {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    const auto deadline = start + std::chrono::duration<double>(timeout_s);
    ExitInfo info;
    auto elapsed = [&] { return std::chrono::duration<double>(clock::now() - start).count(); };
    for (;;) {
        if (until && until()) {
            info.running = true;
            info.elapsed_s = elapsed();
            return info;
        }
        int status = 0;
        pid_t r = waitpid(pid_, &status, WNOHANG);
        if (r == pid_) {
            pid_ = -1;
            info.elapsed_s = elapsed();
            if (WIFSIGNALED(status)) {
                info.signaled = true;
                info.signal = WTERMSIG(status);
            } else {
                info.exit_code = WEXITSTATUS(status);
            }
            info.interrupted = interrupted();
            return info;
        }
        if (r < 0 && errno != EINTR)
            throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
        if (interrupted() || clock::now() >= deadline) {
            info.interrupted = interrupted();
            info.timed_out = !info.interrupted;
            terminate(info.interrupted ? kInterruptGracePeriod_s : kGracePeriod_s);
            info.elapsed_s = elapsed();
            return info;
        }
        if (watch_fd < 0 || !on_readable) {
            std::this_thread::sleep_for(kPollInterval);
            continue;
        }
        pollfd watched{watch_fd, POLLIN, 0};
        const int ready = poll(&watched, 1, static_cast<int>(kPollInterval.count()));
        if (ready > 0 && !on_readable()) watch_fd = -1;
    }
}

}  // namespace harness::plugin_host
