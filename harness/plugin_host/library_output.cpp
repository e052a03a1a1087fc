#include "plugin_host/library_output.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace harness::plugin_host {

namespace {
std::FILE* g_console = nullptr;  // set while a LibraryOutput is alive
}

std::string log_path_of(const std::string& result_path) {
    return result_path + ".log";
}

LibraryOutput::LibraryOutput(const std::string& path) {
    const int log = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log < 0)
        throw std::runtime_error("cannot open the worker's log " + path + ": " +
                                 std::strerror(errno));
    std::fflush(stderr);
    saved_stderr_ = ::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
    if (saved_stderr_ < 0 || ::dup2(log, STDERR_FILENO) < 0) {
        const int error = errno;
        ::close(log);
        if (saved_stderr_ >= 0) ::close(saved_stderr_);
        throw std::runtime_error(std::string("cannot redirect stderr: ") + std::strerror(error));
    }
    ::close(log);
    g_console = ::fdopen(::dup(saved_stderr_), "w");
    if (g_console) std::setvbuf(g_console, nullptr, _IONBF, 0);
}

LibraryOutput::~LibraryOutput() {
    std::fflush(stderr);
    if (g_console) std::fclose(g_console);
    g_console = nullptr;
    ::dup2(saved_stderr_, STDERR_FILENO);
    ::close(saved_stderr_);
}

std::FILE* console() {
    return g_console ? g_console : stderr;
}

std::string read_log(const std::string& path, size_t max_bytes) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return "";
    std::ostringstream text;
    text << in.rdbuf();
    std::string log = text.str();
    if (log.size() <= max_bytes) return log;
    size_t start = log.size() - max_bytes;
    const size_t line = log.find('\n', start);
    start = line == std::string::npos ? start : line + 1;
    return fmt::format("[the log's first {} of {} bytes are left out]\n", start, log.size()) +
           log.substr(start);
}

std::string log_tail_for_console(const std::string& log, size_t lines, const std::string& indent) {
    std::vector<std::string> all;
    std::istringstream in(log);
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) all.push_back(line);
    if (all.empty()) return "";
    const size_t shown = std::min(lines, all.size());
    const char* plural = all.size() == 1 ? "" : "s";
    std::string text =
        shown == 0 ? fmt::format(
                         "{}the libraries wrote {} line{} to stderr, kept in the JSON row's "
                         "\"log\"\n",
                         indent, all.size(), plural)
        : shown == all.size()
            ? fmt::format(
                  "{}the libraries wrote {} line{} to stderr (kept in the JSON row's "
                  "\"log\"):\n",
                  indent, all.size(), plural)
            : fmt::format(
                  "{}the libraries wrote {} lines to stderr (kept in the JSON row's "
                  "\"log\"); the last {}:\n",
                  indent, all.size(), shown);
    for (size_t i = all.size() - shown; i < all.size(); ++i) text += indent + "  " + all[i] + "\n";
    return text;
}

}  // namespace harness::plugin_host
