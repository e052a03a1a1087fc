#include "arena_plan.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace cudnn_backend {

int64_t align_up(int64_t bytes, int64_t alignment) {
    return (bytes + alignment - 1) / alignment * alignment;
}

ArenaPlan plan_arena(const std::vector<BufferRequest>& requests, int64_t alignment) {
    if (alignment <= 0) throw std::invalid_argument("arena alignment must be positive");
    ArenaPlan plan;
    plan.offsets.assign(requests.size(), -1);
    std::vector<size_t> order(requests.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        if (requests[a].bytes != requests[b].bytes) return requests[a].bytes > requests[b].bytes;
        return requests[a].first < requests[b].first;
    });

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
        const int64_t size = align_up(std::max<int64_t>(r.bytes, 1), alignment);
        busy.clear();
        for (size_t other : placed)
            if (lifetimes_intersect(r, requests[other]))
                busy.push_back(
                    {plan.offsets[other],
                     plan.offsets[other] +
                         align_up(std::max<int64_t>(requests[other].bytes, 1), alignment)});
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

std::pair<int, int> find_conflict(const std::vector<BufferRequest>& requests,
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

}  // namespace cudnn_backend
