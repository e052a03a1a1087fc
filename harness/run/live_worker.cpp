#include "run/live_worker.hpp"

#include "run/job_file.hpp"
#include "run/progress.hpp"
#include "run/worker_launch.hpp"

#include <poll.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

namespace harness::run {

namespace {

// The number of kB on the line of `file` that starts with `key` ("VmHWM:"), in bytes.
double kilobytes_in(const std::string& file, const std::string& key) {
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);)
        if (line.compare(0, key.size(), key) == 0) {
            std::istringstream value(line.substr(key.size()));
            double kb = 0;
            if (value >> kb) return kb * 1024;
        }
    return 0;
}

}  // namespace

double peak_resident_bytes(int pid) {
    return kilobytes_in("/proc/" + std::to_string(pid) + "/status", "VmHWM:");
}

double available_memory_bytes() {
    return kilobytes_in("/proc/meminfo", "MemAvailable:");
}

LiveWorker::LiveWorker(const config::RunConfig& config, WorkerJob job, int iterations,
                       double timeout_s, ProgressLine* progress)
    : config_(config),
      job_(std::move(job)),
      iterations_(iterations),
      timeout_s_(timeout_s),
      progress_(progress) {
    // A worker that died leaves its gate without a reader: a write must fail, not kill the harness.
    std::signal(SIGPIPE, SIG_IGN);
    if (!events_.open() || !gate_.open())
        throw std::runtime_error("cannot open the pipes of a paired worker");
    job_.progress_fd = events_.write_fd();
    job_.gate_fd = gate_.read_fd();
    const std::string job_file = job_path_of(job_.result_path);
    write_job_file(job_file, config_, job_);
    child_ = std::make_unique<plugin_host::ChildProcess>(
        worker_arguments(plugin_host::own_executable(), job_file, job_, config_), SIGKILL,
        std::vector<int>{events_.write_fd(), gate_.read_fd()});
    events_.close_write();
    gate_.close_read();
}

template <typename Reached>
bool LiveWorker::wait_for(const Reached& reached) {
    if (exit_) return false;
    auto read = [&] {
        return events_.read_events([&](const StepEvent& e) {
            if (e.phase == "timed") {
                ready_ = true;
                timed_done_ = e.done;
                if (e.last_ms >= 0) last_ms_ = e.last_ms;
            }
            if (progress_ && progress_->enabled() && !ready_) progress_->update(e);
        });
    };
    const plugin_host::ExitInfo info = child_->wait(timeout_s_, events_.read_fd(), read, reached);
    if (info.running) return true;
    exit_ = info;
    // A worker may write its last events and exit before they are read: they are still there.
    for (pollfd waiting{events_.read_fd(), POLLIN, 0}; poll(&waiting, 1, 0) > 0 && read();) {
    }
    return false;
}

bool LiveWorker::wait_ready() {
    if (!wait_for([&] { return ready_; })) return false;
    child_->send(SIGSTOP);
    peak_bytes_ = peak_resident_bytes(child_->pid());
    return true;
}

double LiveWorker::step() {
    if (exit_) return std::numeric_limits<double>::quiet_NaN();
    child_->send(SIGCONT);
    const int before = timed_done_;
    const char word = 's';
    if (write(gate_.write_fd(), &word, 1) != 1) {
        wait_for([] { return false; });
        return std::numeric_limits<double>::quiet_NaN();
    }
    const bool running = wait_for([&] { return timed_done_ > before; });
    if (timed_done_ <= before) return std::numeric_limits<double>::quiet_NaN();
    // Its last step: it finishes alone before any other worker steps again.
    if (running && timed_done_ < iterations_)
        child_->send(SIGSTOP);
    else
        wait_for([] { return false; });
    return last_ms_;
}

output::BackendRun LiveWorker::finish() {
    if (!exit_) {
        child_->send(SIGCONT);
        gate_.close_write();
        wait_for([] { return false; });
    }
    return finish_row(config_, job_, *exit_, timeout_s_);
}

}  // namespace harness::run
