#include "plugin_host/library_output.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <regex>
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

namespace {

bool has_letter(const std::string& line) {
    return std::any_of(line.begin(), line.end(),
                       [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; });
}

// "2026-12-06 20:13:00.123456: I tensorflow/..." or glog's "W1206 20:13:00.123 ...".
bool informational(const std::string& line) {
    static const std::regex pattern(
        R"(^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?: [IW] |[IW]\d{4} \d\d:\d\d))");
    return std::regex_search(line, pattern);
}

}  // namespace

std::string reason_in_log(const std::string& log) {
    constexpr size_t kMaxReason = 300;
    std::istringstream in(log);
    std::string reason;
    for (std::string line; std::getline(in, line);) {
        const size_t first = line.find_first_not_of(" \t\r");
        line = first == std::string::npos ? "" : line.substr(first);
        while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
        const bool text = has_letter(line) && !informational(line) &&
                          line.rfind("[the log's first ", 0) != 0;
        if (!text) {
            if (!reason.empty()) break;
            continue;
        }
        reason += (reason.empty() ? "" : " ") + line;
        if (reason.size() >= kMaxReason) break;
    }
    if (reason.size() > kMaxReason) reason = reason.substr(0, kMaxReason - 3) + "...";
    return reason;
}

}  // namespace harness::plugin_host
