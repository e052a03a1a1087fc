// Deterministic data (docs/design.md §5): a counter-based generator keyed by (seed, tensor name),
// with the float conversion written out, so the same seed gives the same bytes on every machine.
//
// The stream (seed, name) is Philox4x32-10 (Salmon et al. 2011, the Random123 generator) with
//   h   = fnv1a64(name) ^ splitmix64(seed)
//   key = {low 32 bits of h, high 32 bits of h}
// and its k-th 32-bit output is word k % 4 of philox4x32_10(counter, key), where the 128-bit
// counter is the block index k / 4, low word first: {k/4 mod 2^32, k/4 >> 32, 0, 0}.
//
// Pinned values (a change to any of the above changes them):
//   random_bits(1, "input.0", 0..3)  = 0x78a760f9 0x345808ac 0xe400cd6a 0xeaf16ef1
//   uniform(1, "input.0", 4, 0, 1)   = 0x1.e29d8p-2 0x1.a2c04p-3 0x1.c8019ap-1 0x1.d5e2dcp-1
//                                      (0.47130394 0.20446825 0.89063722 0.91774642)
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace harness::data {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

// Ten rounds of Philox4x32 on one counter block.
PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key);

// 64-bit FNV-1a of the bytes of `text` (offset basis 0xcbf29ce484222325, prime 0x100000001b3).
uint64_t fnv1a64(const std::string& text);
// The SplitMix64 finaliser of x + 0x9e3779b97f4a7c15 (Steele, Lea, Flood 2014).
uint64_t splitmix64(uint64_t x);
PhiloxKey stream_key(uint64_t seed, const std::string& name);

// The k-th 32-bit output of the stream keyed by (seed, name).
uint32_t random_bits(uint64_t seed, const std::string& name, uint64_t k);
// The top 24 bits scaled by 2^-24: exactly representable, in [0, 1).
float unit_float(uint32_t bits);
// count floats lo + (hi - lo) * u, computed in float, u = unit_float of the stream (seed, name)
// outputs 0, 1, 2, ...
std::vector<float> uniform(uint64_t seed, const std::string& name, int64_t count, float lo,
                           float hi);

}  // namespace harness::data
