// A child process with a deadline: the harness runs every backend in one (docs/design.md §6) so
// that a crash, an out-of-memory kill or a hang in one backend cannot take the others' results with
// it.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

namespace harness::plugin_host {

struct ExitInfo {
    bool timed_out = false;
    bool interrupted = false;  // the harness itself was asked to stop (SIGINT, SIGTERM, SIGHUP)
    bool signaled = false;
    int signal = 0;     // when signaled
    int exit_code = 0;  // when it exited normally
    double elapsed_s = 0;
    bool running = false;  // wait() returned because its `until` held: the child goes on
};

std::string describe_signal(int signal);  // "signal 11 (Segmentation fault)"

// The path of an executable named `name` in a folder of $PATH, or "" when there is none.
std::string find_executable(const std::string& name);

// The harness's own executable, to start as a child of this process: /proc/self/exe, which stays
// this very binary when its file is rebuilt or deleted while a run goes on, so that every worker
// runs the code its parent runs; the file's path where /proc is not mounted. A launcher such as
// mpirun needs the path: /proc/self/exe would be its own.
std::string own_executable();

class ChildProcess {
public:
    // Starts argv[0] with the given arguments; stdin is /dev/null, stdout and stderr are inherited
    // (stderr appended to `stderr_path` instead when given), and so are `keep_fds` (other
    // descriptors the harness opened close-on-exec stay behind). The child is sent `death_signal`
    // when the harness dies, whatever killed it, so that no worker outlives it (SIGTERM lets a
    // launcher such as mpirun stop what it started).
    explicit ChildProcess(const std::vector<std::string>& argv, int death_signal = SIGKILL,
                          const std::vector<int>& keep_fds = {},
                          const std::string& stderr_path = "");
    ~ChildProcess();  // kills the child if it is still running
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    // Waits until the child exits, the deadline passes (then it is sent SIGTERM and, after a
    // grace period of 3 s, SIGKILL) or the harness is interrupted (likewise, after 10 s, time for
    // a worker to finish its step and write what it measured; a second interrupt kills it at
    // once). Meanwhile `on_readable` is called whenever `watch_fd` has data or has closed; it
    // returns false once there is nothing more to read. With `until`, it returns as soon as
    // `until` holds after a call of `on_readable`, the child still running (`running`).
    ExitInfo wait(double timeout_s, int watch_fd = -1,
                  const std::function<bool()>& on_readable = {},
                  const std::function<bool()>& until = {});

    pid_t pid() const { return pid_; }
    // Sends `signal` to the child while it runs (SIGSTOP and SIGCONT for a paired worker).
    void send(int signal);

private:
    void terminate(double grace_s);
    pid_t pid_ = -1;
};

// Makes SIGINT, SIGTERM and SIGHUP (a closed terminal) set a flag instead of killing the harness,
// so that a run can stop its current worker, write the rows it has finished and remove its scratch
// folder.
void install_interrupt_handler();
bool interrupted();

}  // namespace harness::plugin_host
