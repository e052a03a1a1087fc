// SHA-256 (FIPS 180-4), for the provenance of config files.
#pragma once

#include <string>

namespace harness::config {

// The digest of `bytes` as 64 lowercase hex digits.
std::string sha256_hex(const std::string& bytes);

}  // namespace harness::config
