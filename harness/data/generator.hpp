// Deterministic data (DESIGN §5): a counter-based generator keyed by (seed, tensor name), with the
// float conversion written out, so the same seed gives the same bytes on every machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace harness::data {

// The k-th 32-bit output of the stream keyed by (seed, name).
uint32_t random_bits(uint64_t seed, const std::string& name, uint64_t k);
// The top 24 bits scaled by 2^-24: exactly representable, in [0, 1).
float unit_float(uint32_t bits);
// count floats lo + (hi - lo) * u, u from the stream (seed, name).
std::vector<float> uniform(uint64_t seed, const std::string& name, int64_t count, float lo,
                           float hi);

}  // namespace harness::data
