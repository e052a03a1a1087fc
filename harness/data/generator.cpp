#include "data/generator.hpp"

#include <stdexcept>

namespace harness::data {

namespace {

constexpr uint32_t kMultiplier0 = 0xD2511F53u;
constexpr uint32_t kMultiplier1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;  // golden ratio
constexpr uint32_t kWeyl1 = 0xBB67AE85u;  // sqrt(3) - 1

PhiloxCounter philox_round(const PhiloxCounter& c, const PhiloxKey& k) {
    const uint64_t p0 = uint64_t{kMultiplier0} * c[0];
    const uint64_t p1 = uint64_t{kMultiplier1} * c[2];
    const auto hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const auto hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    return {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
}

PhiloxCounter block(const PhiloxKey& key, uint64_t index) {
    return philox4x32_10({static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), 0, 0},
                         key);
}

}  // namespace

PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key) {
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            key[0] += kWeyl0;
            key[1] += kWeyl1;
        }
        counter = philox_round(counter, key);
    }
    return counter;
}

uint64_t fnv1a64(const std::string& text) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (char c : text) {
        h ^= static_cast<unsigned char>(c);
        h *= 0x100000001b3ull;
    }
    return h;
}

uint64_t splitmix64(uint64_t x) {
    uint64_t z = x + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

PhiloxKey stream_key(uint64_t seed, const std::string& name) {
    const uint64_t h = fnv1a64(name) ^ splitmix64(seed);
    return {static_cast<uint32_t>(h), static_cast<uint32_t>(h >> 32)};
}

uint32_t random_bits(uint64_t seed, const std::string& name, uint64_t k) {
    return block(stream_key(seed, name), k / 4)[k % 4];
}

float unit_float(uint32_t bits) {
    return static_cast<float>(bits >> 8) * 0x1p-24f;
}

std::vector<float> uniform(uint64_t seed, const std::string& name, int64_t count, float lo,
                           float hi) {
    if (count < 0) throw std::invalid_argument("uniform: negative count for '" + name + "'");
    const PhiloxKey key = stream_key(seed, name);
    const float range = hi - lo;
    std::vector<float> out(static_cast<size_t>(count));
    for (size_t i = 0; i < out.size(); i += 4) {
        const PhiloxCounter words = block(key, i / 4);
        for (size_t j = 0; j < 4 && i + j < out.size(); ++j) {
            // Two statements, so that no compiler contracts them into one fused multiply-add.
            const float scaled = range * unit_float(words[j]);
            out[i + j] = lo + scaled;
        }
    }
    return out;
}

}  // namespace harness::data
