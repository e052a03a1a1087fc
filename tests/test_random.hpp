// Test data that is the same everywhere: a small deterministic generator (splitmix64).
#pragma once

#include <cstdint>
#include <vector>

namespace harness::testing {

// A small deterministic generator (splitmix64), so that test data is the same everywhere.
class Random {
public:
    explicit Random(uint64_t seed) : state_(seed) {}
    double uniform(double lo, double hi) {
        state_ += 0x9e3779b97f4a7c15ull;
        uint64_t z = state_;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        return lo + (hi - lo) * static_cast<double>(z >> 11) * 0x1.0p-53;
    }
    std::vector<double> vector(int64_t n, double lo = -1, double hi = 1) {
        std::vector<double> v(static_cast<size_t>(n));
        for (auto& x : v) x = uniform(lo, hi);
        return v;
    }

private:
    uint64_t state_;
};

}  // namespace harness::testing
