// One arena for a training step's transient buffers (activations, their gradients, saved
// statistics, workspaces), on any device: two buffers share memory only when their lifetimes,
// inclusive ranges of step times, do not intersect. Header-only, standard library only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace hb {

// A buffer needed from step time `first` to step time `last`, both included.
struct BufferRequest {
    int64_t bytes = 0;
    int first = 0, last = 0;
    std::string what;  // for messages and manifests
};

struct ArenaPlan {
    std::vector<int64_t> offsets;  // one per request, each a multiple of the alignment
    int64_t bytes = 0;             // the arena's size
    int64_t requested_bytes = 0;   // the sum of the requests
    int64_t unshared_bytes = 0;    // what the requests take with no reuse, each one aligned
};

inline bool lifetimes_intersect(const BufferRequest& a, const BufferRequest& b) {
    return a.first <= b.last && b.first <= a.last;
}

inline int64_t align_up(int64_t bytes, int64_t alignment) {
    return (bytes + alignment - 1) / alignment * alignment;
}

// Largest buffers first (earlier ones first among equals), each at the lowest aligned offset
// that is free throughout its lifetime.
inline ArenaPlan plan_arena(const std::vector<BufferRequest>& requests, int64_t alignment = 256) {
    if (alignment <= 0) throw std::invalid_argument("arena alignment must be positive");
    ArenaPlan plan;
    plan.offsets.assign(requests.size(), -1);
    std::vector<size_t> order(requests.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        if (requests[a].bytes != requests[b].bytes) return requests[a].bytes > requests[b].bytes;
        return requests[a].first < requests[b].first;
    });
    // Every buffer takes at least one aligned unit, so each has an address of its own.
    auto size_of = [&](const BufferRequest& r) {
        return align_up(std::max<int64_t>(r.bytes, 1), alignment);
    };

    struct Span {
        int64_t begin, end;
    };
    std::vector<size_t> placed;
    std::vector<Span> busy;
    for (size_t index : order) {
        const BufferRequest& r = requests[index];
        if (r.bytes < 0 || r.first > r.last)
            throw std::invalid_argument("arena request '" + r.what + "' is malformed");
        plan.requested_bytes += r.bytes;
        const int64_t size = size_of(r);
        plan.unshared_bytes += size;
        busy.clear();
        for (size_t other : placed)
            if (lifetimes_intersect(r, requests[other]))
                busy.push_back(
                    {plan.offsets[other], plan.offsets[other] + size_of(requests[other])});
        std::sort(busy.begin(), busy.end(),
                  [](const Span& a, const Span& b) { return a.begin < b.begin; });
        int64_t offset = 0;
        for (const Span& s : busy) {
            if (s.begin >= offset + size) break;
            offset = std::max(offset, s.end);
        }
        plan.offsets[index] = offset;
        plan.bytes = std::max(plan.bytes, offset + size);
        placed.push_back(index);
    }
    return plan;
}

// The first pair of buffers that are live at the same time and overlap in memory, or {-1, -1}.
inline std::pair<int, int> find_conflict(const std::vector<BufferRequest>& requests,
                                         const ArenaPlan& plan) {
    for (size_t a = 0; a < requests.size(); ++a)
        for (size_t b = a + 1; b < requests.size(); ++b) {
            if (!lifetimes_intersect(requests[a], requests[b])) continue;
            if (requests[a].bytes == 0 || requests[b].bytes == 0) continue;
            const int64_t a0 = plan.offsets[a], a1 = a0 + requests[a].bytes;
            const int64_t b0 = plan.offsets[b], b1 = b0 + requests[b].bytes;
            if (a0 < b1 && b0 < a1) return {static_cast<int>(a), static_cast<int>(b)};
        }
    return {-1, -1};
}

}  // namespace hb
