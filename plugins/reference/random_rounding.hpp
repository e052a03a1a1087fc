// Monte Carlo arithmetic at the granularity of a layer: every result a layer writes is moved as
// another correct float implementation's result may differ from it, and rounded back to T. In a
// format of `bits` significand bits (24 float32, 11 TF32 and float16, 8 bfloat16), u = 2^(1 -
// bits), a result is moved by
//
// - a random relative amount of at most u: the rounding of the result itself;
// - when it is a sum, a random amount of at most `sums` x u x the root mean square of the tensor:
//   the rounding of its partial sums, which is relative to the terms and not to the result, so
//   that a result near zero, a ReLU input that decides where a gradient goes, moves by as much
//   as a large one. `sums` is how many roundings of the terms' scale the sum carries: sqrt(n)
//   for a convolution's n products, summed in whatever order its library's kernels choose (the
//   size of a float sum's error when its roundings add up randomly: Higham and Mary), and 1 for
//   a batch norm's output and a parameter's gradient.
//
// A batch norm's statistics, the mean and variance of a channel's n values, are moved before
// they are used, once per channel, by sqrt(n) roundings of their terms' scale: a library may sum
// them one after another (TensorFlow's Mean over N, H and W does, in float32), and every value of
// the channel then shares that error, which no rounding of single elements imitates.
//
// Runs that differ only in `seed` round differently from one another, as two correct
// implementations do; their spread around the exact step is what `harness check` calls the
// rounding noise of a quantity (docs/conformance.md).
#pragma once

#include "thread_pool.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace hb_reference {

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

// The key of a site's draws, and u, the spacing of the rounded format's significands near 1.
inline uint64_t site_key(const RandomRounding& r, uint64_t site) {
    return (r.seed * 0x2545f4914f6cdd1dULL) ^ (site * 0xd6e8feb86659fd93ULL);
}
inline double unit(const RandomRounding& r) {
    return std::ldexp(1.0, 1 - r.bits);
}

// Moves data[0, n), sums of `sums` roundings each (0: no sums), as above; `site` names the place
// in the step (a layer's output, a gradient), so that each site draws its own numbers. The draw
// is a function of the value, not of its position: equal values stay equal, as any deterministic
// arithmetic keeps them (a max-pooling window whose values tie exactly ties in every member).
template <class T>
void round_randomly(ThreadPool& pool, const RandomRounding& r, uint64_t site, T* data, int64_t n,
                    double sums) {
    if (!r.enabled() || data == nullptr || n == 0) return;
    const uint64_t key = site_key(r, site);
    const double u = unit(r);
    double squares = 0;
    if (sums > 0)
        for (int64_t i = 0; i < n; ++i) squares += static_cast<double>(data[i]) * data[i];
    const double sum_error = sums * u * std::sqrt(squares / static_cast<double>(n));
    parallel_for(pool, n, 1 << 14, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) {
            const double x = static_cast<double>(data[i]);
            const uint64_t b = bits_of(data[i]);
            data[i] = static_cast<T>(x + x * u * centred_uniform(key, b) +
                                     sum_error * centred_uniform(~key, b));
        }
    });
}

// Moves a channel's batch statistics over n values, the mean and the biased variance (whose
// terms' scale is the variance itself), as above; `site` names the batch norm in the step.
inline void round_statistics(const RandomRounding& r, uint64_t site, double n, double& mean,
                             double& var) {
    if (!r.enabled()) return;
    const uint64_t key = site_key(r, site);
    const double u = unit(r), sums = std::sqrt(n);
    const double rms = std::sqrt(var + mean * mean);
    const uint64_t m = bits_of(mean), v = bits_of(var);
    mean += mean * u * centred_uniform(key, m) + sums * u * rms * centred_uniform(~key, m);
    var += var * u * centred_uniform(key, v) + sums * u * var * centred_uniform(~key, v);
    var = std::max(var, 0.0);
}

}  // namespace hb_reference
