// The .npy format, version 1.0: the magic "\x93NUMPY", the version bytes 1 0, a little-endian
// uint16 header length, then a Python dict literal padded with spaces and ended by '\n' so that
// the data starts at a multiple of 64 bytes. Version 2.0 (uint32 length) is accepted on reading.
#include "data/dump.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace harness::data {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

std::string shape_tuple(const std::vector<int64_t>& shape) {
    std::string s = "(";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i > 0) s += ", ";
        s += std::to_string(shape[i]);
    }
    if (shape.size() == 1) s += ",";
    return s + ")";
}

int64_t element_count(const std::vector<int64_t>& shape, const std::string& path) {
    int64_t n = 1;
    for (int64_t d : shape) {
        if (d < 0) throw std::invalid_argument(path + ": negative dimension in the .npy shape");
        n *= d;
    }
    return n;
}

void put_le32(unsigned char* out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}

uint32_t get_le32(const unsigned char* in) {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t{in[i]} << (8 * i);
    return v;
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
    throw std::runtime_error(path + ": " + what);
}

// The text after `'key':` in the header dict, up to the next top-level ',' or '}'.
std::string dict_entry(const std::string& header, const std::string& key, const std::string& path) {
    const std::string quoted = "'" + key + "'";
    size_t at = header.find(quoted);
    if (at == std::string::npos) fail(path, "the .npy header has no " + quoted);
    at = header.find(':', at + quoted.size());
    if (at == std::string::npos) fail(path, "malformed .npy header");
    size_t end = at + 1;
    int depth = 0;
    for (; end < header.size(); ++end) {
        const char c = header[end];
        if (c == '(') ++depth;
        if (c == ')') --depth;
        if (depth == 0 && (c == ',' || c == '}')) break;
    }
    std::string value = header.substr(at + 1, end - at - 1);
    const size_t first = value.find_first_not_of(' ');
    const size_t last = value.find_last_not_of(' ');
    return first == std::string::npos ? "" : value.substr(first, last - first + 1);
}

std::vector<int64_t> parse_shape(const std::string& tuple, const std::string& path) {
    if (tuple.size() < 2 || tuple.front() != '(' || tuple.back() != ')')
        fail(path, "malformed shape " + tuple);
    std::vector<int64_t> shape;
    std::string digits;
    for (size_t i = 1; i < tuple.size(); ++i) {
        const char c = tuple[i];
        if (c >= '0' && c <= '9') {
            digits += c;
        } else if (c == ',' || c == ')') {
            if (!digits.empty()) shape.push_back(std::stoll(digits));
            digits.clear();
        } else if (c != ' ' && c != 'L') {
            fail(path, "malformed shape " + tuple);
        }
    }
    return shape;
}

}  // namespace

void write_npy(const std::string& path, const std::vector<int64_t>& shape, const float* data) {
    const int64_t count = element_count(shape, path);
    std::string dict =
        "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape_tuple(shape) + ", }";
    const size_t preamble = kMagicSize + 2 + 2;
    const size_t unpadded = preamble + dict.size() + 1;  // + the final '\n'
    dict.append((64 - unpadded % 64) % 64, ' ');
    dict += '\n';
    if (dict.size() > 0xffff) fail(path, "shape too long for a version 1.0 .npy header");

    std::string bytes(kMagic, kMagicSize);
    bytes += '\x01';
    bytes += '\x00';
    bytes += static_cast<char>(dict.size() & 0xff);
    bytes += static_cast<char>(dict.size() >> 8);
    bytes += dict;

    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) fail(path, "cannot open for writing");
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    std::vector<unsigned char> chunk;
    constexpr int64_t kChunk = 1 << 16;
    for (int64_t begin = 0; begin < count; begin += kChunk) {
        const int64_t n = std::min(kChunk, count - begin);
        chunk.resize(static_cast<size_t>(n) * 4);
        for (int64_t i = 0; i < n; ++i) {
            uint32_t bits = 0;
            std::memcpy(&bits, data + begin + i, 4);
            put_le32(chunk.data() + 4 * i, bits);
        }
        out.write(reinterpret_cast<const char*>(chunk.data()),
                  static_cast<std::streamsize>(chunk.size()));
    }
    out.close();
    if (!out) fail(path, "write failed");
}

std::vector<float> read_npy(const std::string& path, std::vector<int64_t>* shape) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path, "cannot open for reading");
    unsigned char preamble[12] = {};
    in.read(reinterpret_cast<char*>(preamble), 8);
    if (!in || std::memcmp(preamble, kMagic, kMagicSize) != 0) fail(path, "not a .npy file");
    const int major = preamble[6];
    size_t header_size = 0;
    if (major == 1) {
        in.read(reinterpret_cast<char*>(preamble + 8), 2);
        header_size = size_t{preamble[8]} | size_t{preamble[9]} << 8;
    } else if (major == 2) {
        in.read(reinterpret_cast<char*>(preamble + 8), 4);
        header_size = get_le32(preamble + 8);
    } else {
        fail(path, "unsupported .npy version " + std::to_string(major));
    }
    std::string header(header_size, '\0');
    in.read(header.data(), static_cast<std::streamsize>(header_size));
    if (!in) fail(path, "truncated .npy header");

    const std::string descr = dict_entry(header, "descr", path);
    if (descr != "'<f4'") fail(path, "dtype " + descr + " is not little-endian float32 ('<f4')");
    if (dict_entry(header, "fortran_order", path) != "False")
        fail(path, "Fortran-order arrays are not supported");
    std::vector<int64_t> dims = parse_shape(dict_entry(header, "shape", path), path);

    const auto count = static_cast<size_t>(element_count(dims, path));
    std::vector<unsigned char> raw(count * 4);
    in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size()));
    if (!in) fail(path, "truncated .npy data");
    std::vector<float> data(count);
    for (size_t i = 0; i < count; ++i) {
        const uint32_t bits = get_le32(raw.data() + 4 * i);
        std::memcpy(&data[i], &bits, 4);
    }
    if (shape) *shape = std::move(dims);
    return data;
}

}  // namespace harness::data
