#include "json.hpp"

#include <cmath>
#include <cstdio>

namespace onednn_backend {

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (const char c : s) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char escaped[8];
                    std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
                    out += escaped;
                } else {
                    out += c;
                }
        }
    }
    return out + "\"";
}

JsonObject& JsonObject::add(const std::string& key, const std::string& raw_value) {
    if (!body_.empty()) body_ += ", ";
    body_ += json_string(key) + ": " + raw_value;
    return *this;
}

JsonObject& JsonObject::add(const std::string& key, int64_t value) {
    return add(key, std::to_string(value));
}

JsonObject& JsonObject::add(const std::string& key, uint64_t value) {
    return add(key, std::to_string(value));
}

JsonObject& JsonObject::add(const std::string& key, double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", std::isfinite(value) ? value : 0.0);
    return add(key, std::string(text));
}

JsonObject& JsonObject::add_string(const std::string& key, const std::string& value) {
    return add(key, json_string(value));
}

}  // namespace onednn_backend
