// Google Benchmark's JSON of several backends as one document in its own format (docs/layers.md),
// which its compare.py reads: each benchmark named "<backend>/<name>".
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

namespace harness::layers {

// Per backend (name, the document its worker's Google Benchmark wrote): one document whose
// context is the first's, with each backend's own context keys (backend, plugin, device,
// libraries, options) kept as "<backend> <key>", and whose benchmarks are all of them, renamed,
// with family indices kept apart.
nlohmann::json merge_gbench(const std::vector<std::pair<std::string, nlohmann::json>>& backends);

// A document Google Benchmark wrote. It writes a statistic it cannot compute as NaN, which JSON
// does not have: the relative spread (cv) of times that are all zero, a layer fused into another's
// operation; that becomes 0 (no spread), which compare.py reads; an infinity becomes null. Throws
// nlohmann::json::parse_error on anything else that is not JSON.
nlohmann::json parse_gbench(const std::string& text);

// The keys a backend's worker adds to Google Benchmark's context.
bool is_backend_context_key(const std::string& key);

}  // namespace harness::layers
