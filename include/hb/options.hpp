// A backend's options: declared once (PluginInfo::options, which the harness checks a config
// against before anything runs: ABI 2.4) and read from the session description against the same
// declaration. Header-only, standard library only.
#pragma once

#include "hb/cpu.hpp"
#include "hb/error.hpp"
#include "hb/plugin.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace hb {

// One option create_session takes, as a config writes it.
struct OptionSpec {
    std::string key;
    hb_option_type type = HB_OPTION_BOOL;
    int64_t min = 0, max = 0;          // HB_OPTION_INT: the inclusive range
    std::vector<std::string> choices;  // HB_OPTION_CHOICE: the values it takes
    std::string description;           // one line: what it chooses, and its default
};

inline OptionSpec bool_option(std::string key, std::string description) {
    return {std::move(key), HB_OPTION_BOOL, 0, 0, {}, std::move(description)};
}
inline OptionSpec int_option(std::string key, int64_t min, int64_t max, std::string description) {
    return {std::move(key), HB_OPTION_INT, min, max, {}, std::move(description)};
}
inline OptionSpec choice_option(std::string key, std::vector<std::string> choices,
                                std::string description) {
    return {std::move(key), HB_OPTION_CHOICE, 0, 0, std::move(choices), std::move(description)};
}
// The `threads` option every CPU backend takes.
inline OptionSpec threads_option() {
    return int_option("threads", 1, 1024,
                      "threads of the CPU kernels (default: one per hardware thread)");
}

// A boolean option's value: true, false, 1, 0, on, off, yes or no. False when it is none of them.
inline bool parse_bool(const std::string& text, bool& value) {
    for (const char* t : {"true", "1", "on", "yes"}) {
        if (text == t) {
            value = true;
            return true;
        }
    }
    for (const char* f : {"false", "0", "off", "no"}) {
        if (text == f) {
            value = false;
            return true;
        }
    }
    return false;
}

// A decimal integer in [min, max]; false when `text` is none.
inline bool parse_int(const std::string& text, int64_t min, int64_t max, int64_t& value) {
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno == ERANGE || v < min || v > max) return false;
    value = v;
    return true;
}

// What is wrong with `value` for the option `spec`, as "expected ..., got '...'"; "" when nothing.
inline std::string option_problem(const OptionSpec& spec, const std::string& value) {
    const std::string got = ", got '" + value + "'";
    switch (spec.type) {
        case HB_OPTION_BOOL: {
            bool b = false;
            return parse_bool(value, b) ? "" : "expected true or false" + got;
        }
        case HB_OPTION_INT: {
            int64_t i = 0;
            return parse_int(value, spec.min, spec.max, i)
                       ? ""
                       : "expected an integer in [" + std::to_string(spec.min) + ", " +
                             std::to_string(spec.max) + "]" + got;
        }
        case HB_OPTION_CHOICE: {
            std::string list;
            for (const auto& c : spec.choices) {
                if (c == value) return "";
                list += (list.empty() ? "" : ", ") + c;
            }
            return "expected one of " + list + got;
        }
    }
    return "has a type this SDK does not know";
}

// The declaration of `key`, or nullptr when `specs` has none.
inline const OptionSpec* find_option(const std::vector<OptionSpec>& specs, const std::string& key) {
    for (const auto& s : specs)
        if (s.key == key) return &s;
    return nullptr;
}

// "a, b", or "none".
inline std::string option_keys(const std::vector<OptionSpec>& specs) {
    std::string keys;
    for (const auto& s : specs) keys += (keys.empty() ? "" : ", ") + s.key;
    return keys.empty() ? "none" : keys;
}

// "unknown option 'x' (known: a, b)".
inline std::string unknown_option(const std::string& key, const std::vector<OptionSpec>& specs) {
    return "unknown option '" + key + "' (known: " + option_keys(specs) + ")";
}

// Backend options as given in the run config, checked against the plugin's declaration when the
// session is created: an unknown key or an ill-typed value is an HB_UNSUPPORTED hb::Error. The
// getters read a declared option, or return the fallback when the config does not set it.
class Options {
public:
    Options(int32_t count, const hb_option* options, std::vector<OptionSpec> specs)
        : specs_(std::move(specs)) {
        for (int32_t i = 0; i < count; ++i) {
            const std::string key = options[i].key, value = options[i].value;
            const OptionSpec* s = find_option(specs_, key);
            if (s == nullptr) throw Error(unknown_option(key, specs_), HB_UNSUPPORTED);
            const std::string problem = option_problem(*s, value);
            if (!problem.empty()) throw Error("option '" + key + "': " + problem, HB_UNSUPPORTED);
            values_[key] = value;
        }
    }

    bool has(const std::string& key) const { return values_.count(key) != 0; }

    // A choice option's value (or any option's text).
    std::string get_string(const std::string& key, const std::string& fallback) const {
        declared(key);
        auto it = values_.find(key);
        return it == values_.end() ? fallback : it->second;
    }

    int64_t get_int(const std::string& key, int64_t fallback) const {
        const OptionSpec& s = declared(key);
        auto it = values_.find(key);
        int64_t v = fallback;
        if (it != values_.end()) parse_int(it->second, s.min, s.max, v);
        return v;
    }

    bool get_bool(const std::string& key, bool fallback) const {
        declared(key);
        auto it = values_.find(key);
        bool v = fallback;
        if (it != values_.end()) parse_bool(it->second, v);
        return v;
    }

    // threads_option(): by default the hardware's count.
    int get_threads() const { return static_cast<int>(get_int("threads", logical_processors())); }

private:
    // A plugin reads only what it declares.
    const OptionSpec& declared(const std::string& key) const {
        const OptionSpec* s = find_option(specs_, key);
        if (s == nullptr) throw Error("option '" + key + "' is read but not declared");
        return *s;
    }

    std::vector<OptionSpec> specs_;
    std::map<std::string, std::string> values_;
};

}  // namespace hb
