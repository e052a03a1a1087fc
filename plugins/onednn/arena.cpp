#include "arena.hpp"

#include <sys/mman.h>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace onednn_backend {
namespace {

uint64_t round_up(uint64_t x, uint64_t alignment) {
    return (x + alignment - 1) / alignment * alignment;
}

}  // namespace

ArenaLayout plan_arena(const std::vector<Block>& blocks, uint64_t alignment) {
    ArenaLayout layout;
    layout.offsets.assign(blocks.size(), 0);
    std::vector<size_t> order(blocks.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return blocks[a].bytes != blocks[b].bytes ? blocks[a].bytes > blocks[b].bytes
                                                  : blocks[a].first < blocks[b].first;
    });

    struct Placed {
        uint64_t begin, end;
    };
    std::vector<size_t> placed;
    std::vector<Placed> busy;
    for (size_t index : order) {
        const Block& block = blocks[index];
        const uint64_t bytes = round_up(std::max<uint64_t>(block.bytes, 1), alignment);
        layout.unshared += bytes;
        busy.clear();
        for (size_t other : placed) {
            const Block& o = blocks[other];
            if (o.last < block.first || block.last < o.first) continue;
            busy.push_back(
                {layout.offsets[other],
                 layout.offsets[other] + round_up(std::max<uint64_t>(o.bytes, 1), alignment)});
        }
        std::sort(busy.begin(), busy.end(),
                  [](const Placed& a, const Placed& b) { return a.begin < b.begin; });
        uint64_t offset = 0;
        for (const Placed& p : busy) {
            if (p.begin >= offset + bytes) break;
            offset = std::max(offset, p.end);
        }
        layout.offsets[index] = offset;
        layout.size = std::max(layout.size, offset + bytes);
        placed.push_back(index);
    }
    return layout;
}

AlignedBuffer::AlignedBuffer(uint64_t bytes) : size_(bytes) {
    if (bytes == 0) return;
    // Large buffers (the activations run to gigabytes) go on 2 MiB pages where the kernel offers
    // them on request: far fewer TLB misses for the convolutions and the memory-bound passes.
    constexpr uint64_t kHugePage = uint64_t{2} << 20;
    const uint64_t alignment = bytes >= kHugePage ? kHugePage : 4096;
    const uint64_t rounded = round_up(bytes, alignment);
    data_ = std::aligned_alloc(alignment, rounded);
    if (!data_) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    if (alignment == kHugePage) madvise(data_, rounded, MADV_HUGEPAGE);  // advice only
#endif
    std::memset(data_, 0, rounded);
}

AlignedBuffer::AlignedBuffer(AlignedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
    if (this != &other) {
        std::free(data_);
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

AlignedBuffer::~AlignedBuffer() {
    std::free(data_);
}

}  // namespace onednn_backend
