// What the libraries of a worker write to stderr (TensorFlow's log lines, oneDNN's verbose
// output, CUDA's warnings) goes to the worker's log instead of the console; the harness's own
// messages still reach the console (docs/design.md §6).
#pragma once

#include <cstdio>
#include <string>

namespace harness::plugin_host {

// The worker's log of job result `result_path`: every rank of a job appends to the same file.
std::string log_path_of(const std::string& result_path);

// While alive, file descriptor 2 of this process is the log at `path` (appended to), and
// console() is the stderr the process was started with.
class LibraryOutput {
public:
    explicit LibraryOutput(const std::string& path);
    ~LibraryOutput();
    LibraryOutput(const LibraryOutput&) = delete;
    LibraryOutput& operator=(const LibraryOutput&) = delete;

private:
    int saved_stderr_ = -1;
};

// Where the harness's own messages for a person go: the console's stderr, also while a
// LibraryOutput redirects file descriptor 2.
std::FILE* console();

// The log at `path` as kept in a row: at most its last `max_bytes` bytes, from a line's start,
// under a first line saying how much was left out; "" when the file is absent or empty.
std::string read_log(const std::string& path, size_t max_bytes = 64 * 1024);

// For the console under a row's status: a line saying how many lines the log has and where it is
// kept, then its last `lines` lines (none when 0), each indented by `indent`; "" for an empty log.
std::string log_tail_for_console(const std::string& log, size_t lines, const std::string& indent);

// The first thing in `log` that says why a worker ended without a result: its first paragraph of
// text (lines up to a blank line or a rule of dashes, joined, at most 300 characters), leaving out
// informational and warning lines in glog's and TensorFlow's formats; "" when there is none.
std::string reason_in_log(const std::string& log);

// How much of its log the console shows under a failed row.
constexpr size_t kFailureLogLines = 10;

}  // namespace harness::plugin_host
