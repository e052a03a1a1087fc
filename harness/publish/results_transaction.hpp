// Changes to a results folder (the index's, results/) that happen all at once or not at all: they
// are made in a staged copy of the folder beside it (hard links to the files that stay), which
// then takes the folder's place in one rename (renameat2's RENAME_EXCHANGE). A publish killed at
// any point leaves results/ as it was, or as the publish leaves it; never between.
#pragma once

#include <filesystem>
#include <string>

namespace harness::publish {

class ResultsTransaction {
public:
    // Locks `root`'s parent folder against another publish (exit 2 if one holds it), removes the
    // staged copies a killed publish left beside it, and stages a copy of `root` (an empty one
    // where there is no `root` yet). Throws std::runtime_error naming the folder.
    explicit ResultsTransaction(const std::filesystem::path& root);
    ~ResultsTransaction();  // without commit(): the staged copy is removed, `root` untouched
    ResultsTransaction(const ResultsTransaction&) = delete;
    ResultsTransaction& operator=(const ResultsTransaction&) = delete;

    // Writes `text` to `path` (under `root`) in the staged copy, making its folders.
    void write(const std::filesystem::path& path, const std::string& text);
    // The staged copy takes `root`'s place; the old one is removed.
    void commit();

private:
    std::filesystem::path staged(const std::filesystem::path& path) const;

    std::filesystem::path root_;
    std::filesystem::path stage_;
    int lock_fd_ = -1;
};

// The prefix of a staged copy's name beside `root`: ".NAME.publish-".
std::string staging_prefix(const std::filesystem::path& root);

}  // namespace harness::publish
