#include "run/round_order.hpp"

#include "data/generator.hpp"

#include <unistd.h>

#include <chrono>
#include <numeric>
#include <string>
#include <utility>

namespace harness::run {

namespace {

std::vector<size_t> shuffled(size_t n, uint64_t seed, const std::string& stream) {
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    uint64_t k = 0;
    // Uniform on 0 .. count-1: outputs below 2^32 mod count are drawn again.
    auto index = [&](uint32_t count) {
        const uint32_t reject_below = (uint32_t{0} - count) % count;
        uint32_t x = data::random_bits(seed, stream, k++);
        while (x < reject_below) x = data::random_bits(seed, stream, k++);
        return static_cast<size_t>(x % count);
    };
    for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[index(static_cast<uint32_t>(i))]);
    return order;
}

}  // namespace

std::vector<size_t> round_order(size_t n, uint64_t seed, int round) {
    return shuffled(n, seed, "round order " + std::to_string(round));
}

std::vector<size_t> step_order(size_t n, uint64_t seed, int round, int slot) {
    return shuffled(n, seed, "step order " + std::to_string(round) + " " + std::to_string(slot));
}

uint64_t fresh_order_seed() {
    const auto now = std::chrono::system_clock::now().time_since_epoch().count();
    return data::splitmix64(static_cast<uint64_t>(now) ^
                            (static_cast<uint64_t>(getpid()) << 32));
}

}  // namespace harness::run
