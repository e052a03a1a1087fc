// Where a command writes its results: checked before anything runs or is created, so that a bad
// destination costs no run and leaves nothing behind (docs/failure-modes.md).
#pragma once

#include "config/config.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace harness {

// runs/<config><suffix>-<UTC time>.csv
std::string default_output(const config::RunConfig& config, const std::string& suffix = "");

// A file the command will write (the option names it in the error): not a folder, in a folder
// that exists and takes a new file, or can be created. Throws UsageError.
void check_file(const std::string& option, const std::string& path);
// A folder option (--dump, --trace): an existing path must be a folder that takes a new file, a
// missing one must be creatable. Throws UsageError.
void check_dir(const std::string& option, const std::string& dir);
void create_folder(const std::string& option, const std::filesystem::path& dir);

// A file a command writes or reads, with what it is to the user ("--output", "the config").
struct NamedFile {
    std::string what;
    std::string path;
};
// Refuses (UsageError) a destination that is one of the files the command reads, or another of
// its destinations: paths are compared resolved (relative paths, `..` and symlinks; an existing
// file also by identity, so a hard link is the same file).
void check_distinct(const std::vector<NamedFile>& destinations,
                    const std::vector<NamedFile>& inputs);

}  // namespace harness
