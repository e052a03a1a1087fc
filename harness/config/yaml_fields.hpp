// Typed, positioned access to a parsed YAML document. Every failure is a ConfigError of the form
// "FILE:LINE:COL: key 'a.b': message", pointing at the node that is wrong.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace harness::config {

[[noreturn]] void fail_at(const std::string& file, const YAML::Mark& mark, const std::string& key,
                          const std::string& message);

// One value of the document, with its key path ("model.stacks", "backends[1].options.threads").
struct Field {
    std::string file;
    std::string key;
    YAML::Node node;
    YAML::Mark mark;  // the value's position; the key's where the value is empty

    [[noreturn]] void fail(const std::string& message) const;
    // The value as the message quotes it: "'abc'", "a mapping", "a list", "an empty value".
    std::string describe() const;
    Field element(size_t index) const;  // of a list
};

// A mapping whose keys were checked: each is a string, none is repeated, and each is one of the
// known keys (unless any key is allowed).
class Section {
public:
    Section(const Field& field, std::vector<std::string> known);
    static Section any_keys(const Field& field);

    std::optional<Field> get(const std::string& key) const;
    Field require(const std::string& key) const;  // fails at the mapping when absent
    const std::vector<Field>& fields() const { return fields_; }

private:
    Section(const Field& field, std::vector<std::string> known, bool any_key);

    Field self_;
    std::vector<Field> fields_;
};

// "[1, 16]", "(0, 1]", ">= 0", "> 0".
struct Range {
    double lo, hi;  // hi = infinity for no upper bound
    bool lo_open, hi_open;
    std::string str() const;
    bool contains(double v) const;
};

int read_int(const Field& f, int lo, int hi);
uint64_t read_uint64(const Field& f);
double read_double(const Field& f, const Range& range);
float read_float(const Field& f, const Range& range);  // also checks the value rounded to float32
bool read_bool(const Field& f);
std::string read_string(const Field& f);
// The index in `choices` of the value.
size_t read_choice(const Field& f, const std::vector<std::string>& choices);

}  // namespace harness::config
