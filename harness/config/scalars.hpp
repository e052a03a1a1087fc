// Strict parsing of YAML plain scalars into numbers and booleans: the decimal forms of the
// YAML 1.2 core schema, nothing else (no hex, no ".inf", no "yes"/"on").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace harness::config {

std::optional<int64_t> parse_int(const std::string& text);    // [-+]?[0-9]+
std::optional<uint64_t> parse_uint(const std::string& text);  // [+]?[0-9]+
// [-+]?(.[0-9]+|[0-9]+(.[0-9]*)?)([eE][-+]?[0-9]+)? ; a value that overflows a double is rejected.
std::optional<double> parse_float(const std::string& text);
std::optional<bool> parse_bool(const std::string& text);  // true|True|TRUE|false|False|FALSE

}  // namespace harness::config
