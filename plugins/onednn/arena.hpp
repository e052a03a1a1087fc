// The arena's memory: one aligned host allocation (its placement is hb::plan_arena's,
// include/hb/arena.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace hb_onednn {

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

}  // namespace hb_onednn
