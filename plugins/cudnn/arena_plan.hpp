// Places the step's transient buffers (activations, their gradients, saved statistics, workspaces)
// in one device arena: two buffers share memory only when their lifetimes do not intersect.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cudnn_backend {

// A buffer needed from step time `first` to step time `last`, both included.
struct BufferRequest {
    int64_t bytes = 0;
    int first = 0, last = 0;
    std::string what;  // for messages and the manifest
};

struct ArenaPlan {
    std::vector<int64_t> offsets;  // one per request, each a multiple of the alignment
    int64_t bytes = 0;             // the arena's size
    int64_t requested_bytes = 0;   // the sum of every request (what no reuse would cost)
};

inline bool lifetimes_intersect(const BufferRequest& a, const BufferRequest& b) {
    return a.first <= b.last && b.first <= a.last;
}

int64_t align_up(int64_t bytes, int64_t alignment);

// Largest buffers first, each at the lowest aligned offset that is free during its lifetime.
ArenaPlan plan_arena(const std::vector<BufferRequest>& requests, int64_t alignment = 256);

// The first pair of buffers that are live at the same time and overlap in memory, or {-1, -1}.
std::pair<int, int> find_conflict(const std::vector<BufferRequest>& requests,
                                  const ArenaPlan& plan);

}  // namespace cudnn_backend
