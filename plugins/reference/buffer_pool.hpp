// Recycles gradient buffers during the backward pass: a value's gradient lives only from the
// backward of its last consumer to the backward of its producer, and many values share a size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace hb_reference {

template <class T>
class BufferPool {
public:
    // A buffer of exactly `elements` values, with unspecified contents.
    std::vector<T> acquire(std::size_t elements) {
        for (auto it = free_.begin(); it != free_.end(); ++it) {
            if (it->size() == elements) {
                std::vector<T> buffer = std::move(*it);
                free_.erase(it);
                return buffer;
            }
        }
        allocated_bytes_ += elements * sizeof(T);
        return std::vector<T>(elements);
    }

    void release(std::vector<T>&& buffer) {
        if (!buffer.empty()) free_.push_back(std::move(buffer));
        buffer = std::vector<T>();
    }

    // Everything the pool ever allocated: its peak, since it never gives memory back.
    uint64_t allocated_bytes() const { return allocated_bytes_; }

private:
    std::vector<std::vector<T>> free_;
    uint64_t allocated_bytes_ = 0;
};

}  // namespace hb_reference
