// A config file read as one YAML document, hardened against what yaml-cpp handles badly: nesting
// deeper than a config needs (yaml-cpp recurses until it overflows), a tab in the indentation (it
// says "illegal map value"), a second document, an empty file. Every failure is a ConfigError at
// the file, line and column. The schema (config.cpp) reads the document's fields.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

namespace harness::config {

// The one document of `bytes`, read from the file `path`.
YAML::Node parse_document(const std::string& path, const std::string& bytes);

}  // namespace harness::config
