#pragma once

#include <string>

namespace harness::output {

// Writes `contents` to a temporary file beside `path`, flushes it, then renames it over `path`.
// Throws std::runtime_error naming the path on failure; never leaves a partial file behind.
void write_file_atomically(const std::string& path, const std::string& contents);

}  // namespace harness::output
