#include "arena.hpp"

#include <sys/mman.h>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace hb_onednn {
namespace {

uint64_t round_up(uint64_t x, uint64_t alignment) {
    return (x + alignment - 1) / alignment * alignment;
}

}  // namespace

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

}  // namespace hb_onednn
