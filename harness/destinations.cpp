#include "destinations.hpp"

#include "backend_selection.hpp"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <ctime>

namespace harness {

namespace fs = std::filesystem;

std::string default_output(const config::RunConfig& config, const std::string& suffix) {
    std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    return "runs/" + config.name + suffix + "-" + stamp + ".csv";
}

namespace {

// A folder that a command will write in, checked before anything runs or is created: an
// existing folder must take a new file (a probe file is made and removed at once: permissions
// alone do not tell, /proc is writable for root), a missing one must be creatable from its nearest
// existing parent. Throws a UsageError naming the option and `target`, the file or folder that
// would be written in it.
void check_folder(const std::string& option, const fs::path& dir, const fs::path& target) {
    std::error_code ec;
    fs::path existing = dir;
    while (!existing.empty() && !fs::exists(existing, ec)) {
        const fs::path parent = existing.parent_path();
        if (parent == existing) break;
        existing = parent;
    }
    if (existing.empty()) existing = ".";
    if (!fs::is_directory(existing, ec))
        throw UsageError(option + ": cannot create folder " + dir.string() + ": " +
                         existing.string() + " is not a folder");
    std::string probe = (existing / ".harness-probe-XXXXXX").string();
    if (::mkdtemp(probe.data()) == nullptr)
        throw UsageError(option + ": cannot write " + target.string() +
                         ": no file can be made in " + existing.string() + " (" +
                         std::strerror(errno) + ")");
    fs::remove(probe, ec);
}

}  // namespace

void check_file(const std::string& option, const std::string& path) {
    std::error_code ec;
    if (fs::path(path).filename().empty() || fs::is_directory(path, ec))
        throw UsageError(option + ": " + path + " is a folder; give a file name, such as " +
                         (fs::path(path) / "results.csv").string());
    const fs::path dir = fs::path(path).parent_path();
    check_folder(option, dir.empty() ? fs::path(".") : dir, path);
}

void check_dir(const std::string& option, const std::string& dir) {
    std::error_code ec;
    if (fs::is_symlink(dir, ec) && !fs::exists(dir, ec))
        throw UsageError(option + ": " + dir + " is a symlink to " +
                         fs::read_symlink(dir, ec).string() + ", which does not exist");
    if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
        throw UsageError(option + ": " + dir + " is a file, not a folder");
    check_folder(option, dir, dir);
}

void create_folder(const std::string& option, const fs::path& dir) {
    if (dir.empty()) return;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir))
        throw UsageError(option + ": cannot create folder " + dir.string() + ": " +
                         (ec ? ec.message() : "a file is in the way"));
}

namespace {

bool same_file(const std::string& a, const std::string& b) {
    std::error_code ec;
    if (fs::equivalent(a, b, ec)) return true;
    const fs::path x = fs::weakly_canonical(fs::absolute(a), ec);
    if (ec) return false;
    const fs::path y = fs::weakly_canonical(fs::absolute(b), ec);
    return !ec && x == y;
}

}  // namespace

void check_distinct(const std::vector<NamedFile>& destinations,
                    const std::vector<NamedFile>& inputs) {
    for (size_t i = 0; i < destinations.size(); ++i) {
        const NamedFile& d = destinations[i];
        for (const NamedFile& in : inputs)
            if (same_file(d.path, in.path))
                throw UsageError(d.what + ": " + d.path + " is " + in.what +
                                 ", which this command reads; give another file");
        for (size_t j = 0; j < i; ++j)
            if (same_file(d.path, destinations[j].path))
                throw UsageError(d.what + ": " + d.path + " is also " + destinations[j].what +
                                 "; give another file");
    }
}

}  // namespace harness
