#include "publish/results_transaction.hpp"

#include "output/atomic_file.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace harness::publish {

namespace fs = std::filesystem;

namespace {

std::runtime_error error(const std::string& what) {
    return std::runtime_error(what + ": " + std::strerror(errno));
}

// `to` as a copy of `from` whose files are hard links (copies across file systems).
void link_tree(const fs::path& from, const fs::path& to) {
    for (auto it = fs::recursive_directory_iterator(from); it != fs::recursive_directory_iterator();
         ++it) {
        const fs::path target = to / it->path().lexically_relative(from);
        if (it->is_symlink()) {
            fs::copy_symlink(it->path(), target);
        } else if (it->is_directory()) {
            fs::create_directory(target, it->path());
        } else {
            std::error_code ec;
            fs::create_hard_link(it->path(), target, ec);
            if (ec) fs::copy_file(it->path(), target);
        }
    }
}

}  // namespace

std::string staging_prefix(const fs::path& root) {
    return "." + root.filename().string() + ".publish-";
}

ResultsTransaction::ResultsTransaction(const fs::path& root) : root_(fs::absolute(root)) {
    const fs::path parent = root_.parent_path();
    lock_fd_ = open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (lock_fd_ < 0) throw error("cannot open " + parent.string());
    if (flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
        close(lock_fd_);
        throw std::runtime_error("another harness publish is writing in " + parent.string() +
                                 "; publish again when it is done");
    }
    // Holding the lock, every staged copy beside `root` is one a killed publish left.
    const std::string prefix = staging_prefix(root_);
    for (const auto& entry : fs::directory_iterator(parent))
        if (entry.path().filename().string().rfind(prefix, 0) == 0) fs::remove_all(entry.path());
    std::string pattern = (parent / (prefix + "XXXXXX")).string();
    if (!mkdtemp(pattern.data())) {
        close(lock_fd_);
        throw error("cannot stage a copy of " + root_.string() + " in " + parent.string());
    }
    stage_ = pattern;
    try {
        if (fs::exists(root_)) {
            fs::permissions(stage_, fs::status(root_).permissions());
            link_tree(root_, stage_);
        }
    } catch (...) {
        std::error_code ec;
        fs::remove_all(stage_, ec);
        close(lock_fd_);
        throw;
    }
}

ResultsTransaction::~ResultsTransaction() {
    std::error_code ec;
    fs::remove_all(stage_, ec);
    close(lock_fd_);
}

fs::path ResultsTransaction::staged(const fs::path& path) const {
    const fs::path relative = fs::absolute(path).lexically_normal().lexically_relative(root_);
    if (relative.empty() || *relative.begin() == "..")
        throw std::logic_error(path.string() + " is not under " + root_.string());
    return stage_ / relative;
}

void ResultsTransaction::write(const fs::path& path, const std::string& text) {
    const fs::path target = staged(path);
    fs::create_directories(target.parent_path());
    // A new file in place of the link: the published file it was linked to stays as it is.
    output::write_file_atomically(target.string(), text);
}

void ResultsTransaction::commit() {
    if (!fs::exists(root_)) {
        if (renameat2(AT_FDCWD, stage_.c_str(), AT_FDCWD, root_.c_str(), RENAME_NOREPLACE) != 0)
            throw error("cannot move " + stage_.string() + " to " + root_.string());
        return;
    }
    if (renameat2(AT_FDCWD, stage_.c_str(), AT_FDCWD, root_.c_str(), RENAME_EXCHANGE) == 0)
        return;  // stage_ now names the old folder, which the destructor removes
    if (errno != EINVAL && errno != ENOSYS)
        throw error("cannot exchange " + stage_.string() + " and " + root_.string());
    // A file system without the exchange: two renames, with a moment without `root` between.
    const fs::path old = stage_.string() + "-old";
    if (rename(root_.c_str(), old.c_str()) != 0)
        throw error("cannot move " + root_.string() + " aside");
    if (rename(stage_.c_str(), root_.c_str()) != 0) {
        const auto failed = error("cannot move " + stage_.string() + " to " + root_.string());
        rename(old.c_str(), root_.c_str());
        throw failed;
    }
    stage_ = old;
}

}  // namespace harness::publish
