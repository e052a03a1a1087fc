#include "roofline/ceilings.hpp"

#include "output/stats.hpp"

#include <fmt/format.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>

namespace harness::roofline {

namespace {

using Clock = std::chrono::steady_clock;

// Seconds `work(t)` takes on each of `threads` threads started together.
double timed_on_threads(int threads, const std::function<void(int)>& work) {
    const Clock::time_point start = Clock::now();
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
    work(0);
    for (auto& thread : pool) thread.join();
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// Independent accumulators hide the multiply-add's latency; the result keeps the loop alive.
constexpr int kAccumulators = 12;

#if defined(__x86_64__)
__attribute__((target("avx512f"))) float fma_avx512(int64_t iterations) {
    __m512 acc[kAccumulators];
    for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm512_set1_ps(0.001f * float(k));
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    for (int64_t i = 0; i < iterations; ++i)
        for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm512_fmadd_ps(acc[k], a, b);
    __m512 sum = acc[0];
    for (int k = 1; k < kAccumulators; ++k) sum = _mm512_add_ps(sum, acc[k]);
    float out[16];
    _mm512_storeu_ps(out, sum);
    return out[0] + out[15];
}

__attribute__((target("avx2,fma"))) float fma_avx2(int64_t iterations) {
    __m256 acc[kAccumulators];
    for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm256_set1_ps(0.001f * float(k));
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    for (int64_t i = 0; i < iterations; ++i)
        for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm256_fmadd_ps(acc[k], a, b);
    __m256 sum = acc[0];
    for (int k = 1; k < kAccumulators; ++k) sum = _mm256_add_ps(sum, acc[k]);
    float out[8];
    _mm256_storeu_ps(out, sum);
    return out[0] + out[7];
}
#endif

float fma_scalar(int64_t iterations) {
    float acc[kAccumulators];
    for (int k = 0; k < kAccumulators; ++k) acc[k] = 0.001f * float(k);
    for (int64_t i = 0; i < iterations; ++i)
        for (float& x : acc) x = x * 0.999999f + 1e-7f;
    float sum = 0;
    for (float x : acc) sum += x;
    return sum;
}

struct FmaKernel {
    float (*run)(int64_t);
    int lanes;
    const char* name;
};

FmaKernel widest_fma() {
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f")) return {fma_avx512, 16, "AVX-512"};
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return {fma_avx2, 8, "AVX2+FMA"};
#endif
    return {fma_scalar, 1, "scalar"};
}

Measured fma_rate_on(int threads) {
    const FmaKernel kernel = widest_fma();
    std::vector<float> sinks(static_cast<size_t>(threads));
    const auto run = [&](int64_t iterations) {
        return timed_on_threads(
            threads, [&](int t) { sinks[static_cast<size_t>(t)] += kernel.run(iterations); });
    };
    // About 50 ms a repetition, from a first short run.
    const int64_t probe = 1 << 20;
    const double probe_s = std::max(run(probe), 1e-6);
    const auto iterations = std::max<int64_t>(probe, static_cast<int64_t>(probe * 0.05 / probe_s));
    const double flops = 2.0 * kernel.lanes * kAccumulators * double(iterations) * threads;
    std::vector<double> rates;
    for (int r = 0; r < 7; ++r) rates.push_back(flops / run(iterations));
    Measured m = spread_of(rates);
    m.how = fmt::format("{}, {} accumulators per thread (checksum {:g})", kernel.name,
                        kAccumulators, double(sinks[0]));
    return m;
}

int64_t last_level_cache_bytes() {
    for (int name : {_SC_LEVEL4_CACHE_SIZE, _SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE}) {
        const long size = ::sysconf(name);
        if (size > 0) return size;
    }
    return 0;
}

Measured triad_rate(int threads) {
    // Each array as large as the last-level cache, within [64 MiB, 256 MiB]: the three together
    // three times any cache the threads share, at least.
    const int64_t bytes =
        std::clamp<int64_t>(last_level_cache_bytes(), int64_t{64} << 20, int64_t{256} << 20);
    const auto n = static_cast<size_t>(bytes / 4);
    const std::unique_ptr<float[]> a(new float[n]), b(new float[n]), c(new float[n]);
    const auto range = [&](int t) {
        return std::make_pair(n * static_cast<size_t>(t) / static_cast<size_t>(threads),
                              n * static_cast<size_t>(t + 1) / static_cast<size_t>(threads));
    };
    // Each thread first touches the range it will stream, so its pages are near it.
    timed_on_threads(threads, [&](int t) {
        const auto [begin, end] = range(t);
        for (size_t i = begin; i < end; ++i) a[i] = 0, b[i] = 1, c[i] = 2;
    });
    const float s = 3;
    std::vector<double> rates;
    for (int r = 0; r < 10; ++r)
        rates.push_back(3.0 * 4.0 * double(n) / timed_on_threads(threads, [&](int t) {
                            const auto [begin, end] = range(t);
                            float* __restrict x = a.get();
                            const float* __restrict y = b.get();
                            const float* __restrict z = c.get();
                            for (size_t i = begin; i < end; ++i) x[i] = y[i] + s * z[i];
                        }));
    Measured m = spread_of(rates);
    m.how =
        fmt::format("triad over 3 x {} MiB (a[{}] = {:g})", bytes >> 20, n / 2, double(a[n / 2]));
    return m;
}

}  // namespace

Measured spread_of(std::vector<double> rates) {
    Measured m;
    if (rates.empty()) return m;
    std::sort(rates.begin(), rates.end());
    m.best = rates.back();
    m.worst = rates.front();
    m.median = output::percentile(rates, 0.5);
    m.repetitions = static_cast<int>(rates.size());
    return m;
}

Measured measure_fma_rate(int threads) {
    return fma_rate_on(std::max(1, threads));
}

Ceilings measure_ceilings(int threads) {
    Ceilings c;
    c.threads = std::max(1, threads);
    c.flops = fma_rate_on(c.threads);
    c.bytes = triad_rate(c.threads);
    return c;
}

}  // namespace harness::roofline
