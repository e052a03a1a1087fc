// Just enough JSON output for a plugin's manifest (hb::Session::manifest_json): escaped strings and
// the comma bookkeeping of objects and arrays. Header-only, standard library only.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

namespace hb {

// `s` as a JSON string literal, quotes included; control characters escaped.
inline std::string json_string(const std::string& s) {
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

// A number as JSON text; JSON has no NaN or infinity, so those become null.
inline std::string json_number(double value) {
    if (!std::isfinite(value)) return "null";
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", value);
    return text;
}

// One JSON object, members in the order added. `add` takes raw JSON text (a nested object's or
// array's str()); the typed overloads write numbers, booleans and strings.
class JsonObject {
public:
    JsonObject& add(const std::string& key, const std::string& raw_value) {
        if (!body_.empty()) body_ += ", ";
        body_ += json_string(key) + ": " + raw_value;
        return *this;
    }
    JsonObject& add(const std::string& key, int64_t value) {
        return add(key, std::to_string(value));
    }
    JsonObject& add(const std::string& key, uint64_t value) {
        return add(key, std::to_string(value));
    }
    JsonObject& add(const std::string& key, int value) { return add(key, int64_t{value}); }
    JsonObject& add(const std::string& key, double value) { return add(key, json_number(value)); }
    JsonObject& add_bool(const std::string& key, bool value) {
        return add(key, std::string(value ? "true" : "false"));
    }
    JsonObject& add_string(const std::string& key, const std::string& value) {
        return add(key, json_string(value));
    }
    std::string str() const { return "{" + body_ + "}"; }

private:
    std::string body_;
};

// One JSON array, elements in the order added.
class JsonArray {
public:
    JsonArray& add(const std::string& raw_value) {
        if (!body_.empty()) body_ += ", ";
        body_ += raw_value;
        return *this;
    }
    JsonArray& add_string(const std::string& value) { return add(json_string(value)); }
    bool empty() const { return body_.empty(); }
    std::string str() const { return "[" + body_ + "]"; }

private:
    std::string body_;
};

}  // namespace hb
