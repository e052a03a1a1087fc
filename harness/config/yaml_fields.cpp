#include "config/yaml_fields.hpp"

#include "config/config.hpp"
#include "config/printable.hpp"
#include "config/scalars.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <sstream>

namespace harness::config {
namespace {

std::string join_key(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
}

// The optimal-string-alignment distance: edits, plus swaps of two adjacent characters.
size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
            }
        }
    }
    return d[a.size()][b.size()];
}

std::string lowercase(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string unknown_key_message(const std::string& path, const std::string& key,
                                const std::vector<std::string>& known) {
    std::string message = "unknown key '" + join_key(path, key) + "'";
    const std::string best = near_miss(key, known);
    if (!best.empty()) return message + " (did you mean '" + best + "'?)";
    message += " (expected one of: ";
    for (size_t i = 0; i < known.size(); ++i) message += (i ? ", " : "") + known[i];
    return message + ")";
}

std::string format_number(double v) {
    std::ostringstream out;
    out << v;
    return out.str();
}

bool is_quoted(const YAML::Node& node) {
    return node.Tag() == "!";
}

const std::string& scalar_of(const Field& f, const std::string& expected) {
    if (!f.node.IsScalar() || is_quoted(f.node)) f.fail(expected + ", got " + f.describe());
    return f.node.Scalar();
}

}  // namespace

void fail_at(const std::string& file, const YAML::Mark& mark, const std::string& key,
             const std::string& message) {
    std::string where = file;
    if (!mark.is_null()) {
        where += ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
    }
    // One line, whatever the file holds: its bytes are quoted escaped.
    throw ConfigError(
        printable(where + ": " + (key.empty() ? "" : "key '" + key + "': ") + message));
}

void Field::fail(const std::string& message) const {
    fail_at(file, mark, key, message);
}

std::string Field::describe() const {
    if (node.IsMap()) return "a mapping";
    if (node.IsSequence()) return "a list";
    if (!node.IsScalar()) return "an empty value";
    constexpr size_t kMaxShown = 40;
    std::string text = node.Scalar();
    if (text.size() > kMaxShown) text = text.substr(0, kMaxShown) + "...";
    return (is_quoted(node) ? "the string '" : "'") + text + "'";
}

Field Field::element(size_t index) const {
    const YAML::Node item = node[index];
    const YAML::Mark item_mark = item.IsNull() ? mark : item.Mark();
    return Field{file, key + "[" + std::to_string(index) + "]", item, item_mark};
}

Section::Section(const Field& field, std::vector<std::string> known)
    : Section(field, std::move(known), false) {}

Section Section::any_keys(const Field& field) {
    return Section(field, {}, true);
}

Section::Section(const Field& field, std::vector<std::string> known, bool any_key) : self_(field) {
    if (!field.node.IsMap()) field.fail("expected a mapping, got " + field.describe());
    for (auto it = field.node.begin(); it != field.node.end(); ++it) {
        const YAML::Node key_node = it->first;
        if (!key_node.IsScalar() || key_node.Scalar().empty()) {
            fail_at(field.file, key_node.Mark(), field.key,
                    "expected a key name, got " + Field{field.file, "", key_node, {}}.describe());
        }
        const std::string& key = key_node.Scalar();
        const std::string path = join_key(field.key, key);
        for (const Field& seen : fields_) {
            if (seen.key == path) {
                fail_at(field.file, key_node.Mark(), path,
                        "duplicate key '" + path + "' (first at line " +
                            std::to_string(seen.mark.line + 1) + ")");
            }
        }
        if (!any_key && std::find(known.begin(), known.end(), key) == known.end()) {
            fail_at(field.file, key_node.Mark(), path, unknown_key_message(field.key, key, known));
        }
        const YAML::Node value = it->second;
        fields_.push_back(
            Field{field.file, path, value, value.IsNull() ? key_node.Mark() : value.Mark()});
    }
}

std::optional<Field> Section::get(const std::string& key) const {
    const std::string path = join_key(self_.key, key);
    for (const Field& f : fields_) {
        if (f.key == path) return f;
    }
    return std::nullopt;
}

Field Section::require(const std::string& key) const {
    if (auto f = get(key)) return *f;
    const std::string path = join_key(self_.key, key);
    fail_at(self_.file, self_.mark, path, "missing required key '" + path + "'");
}

std::string Range::str() const {
    if (std::isinf(hi)) return (lo_open ? "> " : ">= ") + format_number(lo);
    return std::string("in ") + (lo_open ? "(" : "[") + format_number(lo) + ", " +
           format_number(hi) + (hi_open ? ")" : "]");
}

bool Range::contains(double v) const {
    if (!std::isfinite(v)) return false;
    return (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
}

int read_int(const Field& f, int lo, int hi) {
    const std::string expected =
        "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    const std::optional<int64_t> v = parse_int(scalar_of(f, expected));
    if (!v || *v < lo || *v > hi) f.fail(expected + ", got " + f.describe());
    return static_cast<int>(*v);
}

uint64_t read_uint64(const Field& f) {
    const std::string expected = "expected an unsigned 64-bit integer";
    const std::optional<uint64_t> v = parse_uint(scalar_of(f, expected));
    if (!v) f.fail(expected + ", got " + f.describe());
    return *v;
}

double read_double(const Field& f, const Range& range) {
    const std::string expected = "expected a number " + range.str();
    const std::optional<double> v = parse_float(scalar_of(f, expected));
    if (!v || !range.contains(*v)) f.fail(expected + ", got " + f.describe());
    return *v;
}

float read_float(const Field& f, const Range& range) {
    const double v = read_double(f, range);
    const auto rounded = static_cast<float>(v);
    if (!range.contains(static_cast<double>(rounded))) {
        f.fail("expected a number " + range.str() + ", got " + f.describe() + ", which is " +
               format_number(static_cast<double>(rounded)) + " as a float32");
    }
    return rounded;
}

bool read_bool(const Field& f) {
    const std::string expected = "expected true or false";
    const std::optional<bool> v = parse_bool(scalar_of(f, expected));
    if (!v) f.fail(expected + ", got " + f.describe());
    return *v;
}

std::string read_string(const Field& f) {
    if (!f.node.IsScalar()) f.fail("expected a string, got " + f.describe());
    return f.node.Scalar();
}

size_t read_choice(const Field& f, const std::vector<std::string>& choices) {
    std::string expected = "expected ";
    for (size_t i = 0; i < choices.size(); ++i) {
        expected += (i == 0                    ? ""
                     : i + 1 == choices.size() ? " or "
                                               : ", ") +
                    ("'" + choices[i] + "'");
    }
    if (!f.node.IsScalar()) f.fail(expected + ", got " + f.describe());
    const auto it = std::find(choices.begin(), choices.end(), f.node.Scalar());
    if (it == choices.end()) f.fail(expected + ", got " + f.describe());
    return static_cast<size_t>(it - choices.begin());
}

std::string near_miss(const std::string& key, const std::vector<std::string>& known) {
    const std::string* best = nullptr;
    size_t best_distance = std::numeric_limits<size_t>::max();
    for (const std::string& candidate : known) {
        const size_t distance = edit_distance(lowercase(key), candidate);
        if (distance < best_distance) best_distance = distance, best = &candidate;
    }
    return best != nullptr && best_distance <= (best->size() >= 6 ? 2u : 1u) ? *best : "";
}

}  // namespace harness::config
