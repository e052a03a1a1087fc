// Places buffers with known lifetimes in one allocation: two buffers may overlap in memory only
// when their lifetimes (inclusive step ranges) do not overlap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace onednn_backend {

struct Block {
    uint64_t bytes = 0;
    int first = 0, last = 0;  // steps it is live in, inclusive
};

struct ArenaLayout {
    std::vector<uint64_t> offsets;  // per block, multiples of the alignment
    uint64_t size = 0;              // bytes the arena needs
    uint64_t unshared = 0;          // bytes without reuse (every block apart), for the manifest
};

// Greedy: largest blocks first, each at the lowest offset free throughout its lifetime.
ArenaLayout plan_arena(const std::vector<Block>& blocks, uint64_t alignment);

// A zero-initialised, aligned allocation owned by the caller; freed by the destructor.
class AlignedBuffer {
public:
    AlignedBuffer() = default;
    explicit AlignedBuffer(uint64_t bytes);
    AlignedBuffer(AlignedBuffer&& other) noexcept;
    AlignedBuffer& operator=(AlignedBuffer&& other) noexcept;
    AlignedBuffer(const AlignedBuffer&) = delete;
    AlignedBuffer& operator=(const AlignedBuffer&) = delete;
    ~AlignedBuffer();

    float* floats() { return static_cast<float*>(data_); }
    const float* floats() const { return static_cast<const float*>(data_); }
    char* bytes() { return static_cast<char*>(data_); }
    uint64_t size() const { return size_; }

private:
    void* data_ = nullptr;
    uint64_t size_ = 0;
};

}  // namespace onednn_backend
