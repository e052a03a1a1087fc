// A backend's options: declared once, each with its default (PluginInfo::options, which the harness
// checks a config against before anything runs, and `harness list` shows) and read from the
// session description against the same declaration. Header-only, standard library only.
#pragma once

#include "hb/cpu.hpp"
#include "hb/error.hpp"
#include "hb/manifest.hpp"
#include "hb/plugin.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
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
    std::string description;           // one line: what it chooses
    // The value an unset option takes, as a config writes it; "" when unset means something no
    // value says (the description says what, and the plugin reads has() first).
    // since ABI 2.5
    std::string default_value;
    // What its values change, and the shipped check config that exercises them ("" for
    // check.yaml): `harness check --suite` checks each value of a boolean or choice option that
    // changes the step there (since ABI 2.6; timing_only() and checked_on() below set them).
    hb_option_effect effect = HB_OPTION_CHANGES_STEP;
    std::string checked_on{};
};

// Each takes its default, or std::nullopt when unset means something no value says.
inline OptionSpec bool_option(std::string key, std::optional<bool> default_value,
                              std::string description) {
    return {std::move(key),
            HB_OPTION_BOOL,
            0,
            0,
            {},
            std::move(description),
            default_value ? (*default_value ? "true" : "false") : ""};
}
inline OptionSpec int_option(std::string key, int64_t min, int64_t max,
                             std::optional<int64_t> default_value, std::string description) {
    return {std::move(key),
            HB_OPTION_INT,
            min,
            max,
            {},
            std::move(description),
            default_value ? std::to_string(*default_value) : ""};
}
inline OptionSpec choice_option(std::string key, std::vector<std::string> choices,
                                std::optional<std::string> default_value, std::string description) {
    return {std::move(key),         HB_OPTION_CHOICE,          0, 0, std::move(choices),
            std::move(description), default_value.value_or("")};
}
// The `math` option of a backend that computes in several of hb::Math's modes, `modes` with its
// default first; Options::get_math() reads it as the same type the manifest reports (hb::manifest).
inline OptionSpec math_option(const std::vector<Math>& modes, std::string description) {
    std::vector<std::string> words;
    for (Math m : modes) words.emplace_back(to_string(m));
    return choice_option("math", words, words.front(), std::move(description));
}

// `spec`, declared to change only how fast the step runs, never what it computes.
inline OptionSpec timing_only(OptionSpec spec) {
    spec.effect = HB_OPTION_CHANGES_TIMING;
    return spec;
}
// `spec`, whose values the suite checks on the shipped check config `config` ("check-seed").
inline OptionSpec checked_on(OptionSpec spec, std::string config) {
    spec.checked_on = std::move(config);
    return spec;
}

// The `threads` option every CPU backend takes: unset, one per hardware thread. It changes only
// the timing: a backend whose step depends on its thread count declares its own.
inline OptionSpec threads_option() {
    return timing_only(int_option("threads", 1, 1024, std::nullopt,
                                  "threads of the CPU kernels (unset: one per hardware thread)"));
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

// An option name the backends shared here once used for what another name now says (one name per
// idea across plugins, docs/design.md "Names"), with what to write instead.
struct RetiredOption {
    const char* key;
    const char* replacement;  // the key that took its place
    const char* write;        // what a config writes instead
};
inline const std::vector<RetiredOption>& retired_options() {
    static const std::vector<RetiredOption> retired = {
        {"fused_bn_relu", "fuse_batchnorm_relu", "fuse_batchnorm_relu"},
        {"batchnorm", "batchnorm_api", "batchnorm_api: ex or legacy"},
        {"convolutions", "convolution_api", "convolution_api: graph or legacy"},
        {"channels_last", "layout", "layout: nhwc for channels_last: true, nchw for false"},
        {"precision", "math", "math: fp64 for precision: fp64, fp32 for fp32"},
        {"tf32", "math", "math: tf32 for tf32: true, fp32 for false"},
    };
    return retired;
}

// For a key `specs` does not declare but once did under that name: "'key' is now ...: write ...";
// "" otherwise.
inline std::string retired_option(const std::string& key, const std::vector<OptionSpec>& specs) {
    for (const RetiredOption& r : retired_options())
        if (key == r.key && find_option(specs, r.replacement) != nullptr)
            return "option '" + key + "' is now '" + r.replacement + "': write " + r.write;
    return "";
}

// "unknown option 'x' (known: a, b)", or what a retired name is now.
inline std::string unknown_option(const std::string& key, const std::vector<OptionSpec>& specs) {
    const std::string retired = retired_option(key, specs);
    if (!retired.empty()) return retired;
    return "unknown option '" + key + "' (known: " + option_keys(specs) + ")";
}

// Backend options as given in the run config, checked against the plugin's declaration when the
// session is created: an unknown key or an ill-typed value is an HB_UNSUPPORTED hb::Error. The
// getters read a declared option: the config's value, or else the declared default.
class Options {
public:
    Options(int32_t count, const hb_option* options, std::vector<OptionSpec> specs)
        : specs_(std::move(specs)) {
        for (const auto& s : specs_)
            if (!s.default_value.empty() && !option_problem(s, s.default_value).empty())
                throw Error("option '" + s.key +
                            "': its declared default: " + option_problem(s, s.default_value));
        for (int32_t i = 0; i < count; ++i) {
            const std::string key = options[i].key, value = options[i].value;
            const OptionSpec* s = find_option(specs_, key);
            if (s == nullptr) throw Error(unknown_option(key, specs_), HB_UNSUPPORTED);
            const std::string problem = option_problem(*s, value);
            if (!problem.empty()) throw Error("option '" + key + "': " + problem, HB_UNSUPPORTED);
            values_[key] = value;
        }
    }

    // Whether the config sets `key`.
    bool has(const std::string& key) const { return values_.count(key) != 0; }

    // A choice option's value (or any option's text).
    std::string get_string(const std::string& key) const { return value(key); }

    int64_t get_int(const std::string& key) const {
        const OptionSpec& s = declared(key);
        int64_t v = 0;
        parse_int(value(key), s.min, s.max, v);
        return v;
    }

    bool get_bool(const std::string& key) const {
        bool v = false;
        parse_bool(value(key), v);
        return v;
    }

    // math_option(): the mode the config chose, else the default.
    Math get_math() const { return math_from_string(get_string("math")).value_or(Math::fp32); }

    // threads_option(): unset, the hardware's count.
    int get_threads() const {
        return static_cast<int>(has("threads") ? get_int("threads") : logical_processors());
    }

private:
    // A plugin reads only what it declares.
    const OptionSpec& declared(const std::string& key) const {
        const OptionSpec* s = find_option(specs_, key);
        if (s == nullptr) throw Error("option '" + key + "' is read but not declared");
        return *s;
    }

    // The config's text, or the declared default.
    std::string value(const std::string& key) const {
        const OptionSpec& s = declared(key);
        auto it = values_.find(key);
        if (it != values_.end()) return it->second;
        if (s.default_value.empty())
            throw Error("option '" + key + "' is read unset, and it declares no default");
        return s.default_value;
    }

    std::vector<OptionSpec> specs_;
    std::map<std::string, std::string> values_;
};

}  // namespace hb
