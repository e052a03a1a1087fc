// Monte Carlo arithmetic at the granularity of a layer: every result a layer writes is moved by a
// random relative amount of at most 2^(1 - bits) and rounded back to T, the size of the rounding
// error of one operation in a format of `bits` significand bits (24 float32, 11 TF32 and float16,
// 8 bfloat16). Runs that differ only in `seed` round differently from one another, as two
// correct implementations do; their spread around the exact step is what `harness check` calls
// the rounding noise of a quantity (docs/conformance.md "The rounding-noise ensemble").
#pragma once

#include "thread_pool.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace reference {

struct RandomRounding {
    uint64_t seed = 0;  // 0: off, every result rounded to nearest as computed
    int bits = 24;
    bool enabled() const { return seed != 0; }
};

// A uniform value in [-1, 1) from (key, index) alone.
inline double centred_uniform(uint64_t key, uint64_t index) {
    uint64_t z = key + 0x9e3779b97f4a7c15ULL * (index + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0;
}

// The bits of x, as an unsigned integer.
template <class T>
uint64_t bits_of(T x) {
    if constexpr (sizeof(T) == 4) {
        uint32_t b;
        std::memcpy(&b, &x, 4);
        return b;
    } else {
        uint64_t b;
        std::memcpy(&b, &x, 8);
        return b;
    }
}

// Moves data[0, n) as above; `site` names the place in the step (a layer's output, a gradient),
// so that each site draws its own numbers. The draw is a function of the value, not of its
// position: equal values stay equal, as any deterministic arithmetic keeps them (a max-pooling
// window whose values tie exactly ties in every member).
template <class T>
void round_randomly(ThreadPool& pool, const RandomRounding& r, uint64_t site, T* data, int64_t n) {
    if (!r.enabled() || data == nullptr) return;
    const uint64_t key = (r.seed * 0x2545f4914f6cdd1dULL) ^ (site * 0xd6e8feb86659fd93ULL);
    const double size = std::ldexp(1.0, 1 - r.bits);
    parallel_for(pool, n, 1 << 14, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) {
            const double x = static_cast<double>(data[i]);
            data[i] = static_cast<T>(x + x * size * centred_uniform(key, bits_of(data[i])));
        }
    });
}

}  // namespace reference
