#include "config/scalars.hpp"

#include <charconv>
#include <cmath>

namespace harness::config {
namespace {

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

size_t skip_digits(const std::string& text, size_t i) {
    while (i < text.size() && is_digit(text[i])) ++i;
    return i;
}

bool is_float_syntax(const std::string& text) {
    size_t i = 0;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    size_t mantissa_digits = 0;
    size_t next = skip_digits(text, i);
    mantissa_digits += next - i;
    i = next;
    if (i < text.size() && text[i] == '.') {
        next = skip_digits(text, ++i);
        mantissa_digits += next - i;
        i = next;
    }
    if (mantissa_digits == 0) return false;
    if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
        ++i;
        if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
        next = skip_digits(text, i);
        if (next == i) return false;
        i = next;
    }
    return i == text.size();
}

// std::from_chars does not accept the leading '+' that YAML allows.
const char* skip_plus(const std::string& text) {
    return text.data() + (!text.empty() && text[0] == '+' ? 1 : 0);
}

}  // namespace

std::optional<int64_t> parse_int(const std::string& text) {
    const char* first = skip_plus(text);
    const char* last = text.data() + text.size();
    const char* digits = first != last && *first == '-' ? first + 1 : first;
    if (digits == last || !is_digit(*digits)) return std::nullopt;
    int64_t value = 0;
    const auto [end, error] = std::from_chars(first, last, value);
    if (error != std::errc() || end != last) return std::nullopt;
    return value;
}

std::optional<uint64_t> parse_uint(const std::string& text) {
    const char* first = skip_plus(text);
    const char* last = text.data() + text.size();
    if (first == last || !is_digit(*first)) return std::nullopt;
    uint64_t value = 0;
    const auto [end, error] = std::from_chars(first, last, value);
    if (error != std::errc() || end != last) return std::nullopt;
    return value;
}

std::optional<double> parse_float(const std::string& text) {
    if (!is_float_syntax(text)) return std::nullopt;
    const char* first = skip_plus(text);
    const char* last = text.data() + text.size();
    double value = 0;
    const auto [end, error] = std::from_chars(first, last, value);
    if (error != std::errc() || end != last || !std::isfinite(value)) return std::nullopt;
    return value;
}

std::optional<bool> parse_bool(const std::string& text) {
    if (text == "true" || text == "True" || text == "TRUE") return true;
    if (text == "false" || text == "False" || text == "FALSE") return false;
    return std::nullopt;
}

}  // namespace harness::config
