// Writing CSV (RFC 4180): a field quoted when it holds a comma, a quote or a line break.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace harness::output {

inline std::string csv_field(const std::string& field) {
    if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
    std::string out = "\"";
    for (char c : field) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + '"';
}

inline void append_csv_line(std::string& out, const std::vector<std::string>& fields) {
    for (size_t i = 0; i < fields.size(); ++i) {
        if (i > 0) out += ',';
        out += csv_field(fields[i]);
    }
    out += '\n';
}

// key=value pairs joined by ';' (the options and libraries columns).
inline std::string join_pairs(const std::map<std::string, std::string>& kv) {
    std::string out;
    for (const auto& [k, v] : kv) {
        if (!out.empty()) out += ';';
        out += k + '=' + v;
    }
    return out;
}

}  // namespace harness::output
