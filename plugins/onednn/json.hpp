// Just enough JSON output for the manifest: escaped strings and comma bookkeeping.
#pragma once

#include <cstdint>
#include <string>

namespace onednn_backend {

std::string json_string(const std::string& s);

// Builds one JSON object; values are raw JSON text (use json_string for strings).
class JsonObject {
public:
    JsonObject& add(const std::string& key, const std::string& raw_value);
    JsonObject& add(const std::string& key, int64_t value);
    JsonObject& add(const std::string& key, uint64_t value);
    JsonObject& add(const std::string& key, int value) { return add(key, int64_t{value}); }
    JsonObject& add(const std::string& key, double value);
    JsonObject& add_string(const std::string& key, const std::string& value);
    std::string str() const { return "{" + body_ + "}"; }

private:
    std::string body_;
};

}  // namespace onednn_backend
