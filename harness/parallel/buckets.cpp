#include "parallel/buckets.hpp"

#include <stdexcept>
#include <string>

namespace harness::parallel {

std::vector<Bucket> plan_buckets(const std::vector<int64_t>& elements, int64_t bucket_bytes) {
    std::vector<Bucket> buckets;
    const int64_t cap = bucket_bytes / static_cast<int64_t>(sizeof(float));
    for (size_t i = 0; i < elements.size(); ++i) {
        const bool fits = !buckets.empty() && buckets.back().elements + elements[i] <= cap;
        if (!fits) buckets.push_back(Bucket{static_cast<int>(i), 0, 0});
        buckets.back().count += 1;
        buckets.back().elements += elements[i];
    }
    return buckets;
}

BucketTracker::BucketTracker(const std::vector<Bucket>& buckets) : buckets_(buckets) {
    for (size_t b = 0; b < buckets.size(); ++b)
        for (int i = 0; i < buckets[b].count; ++i) bucket_of_.push_back(static_cast<int>(b));
    start_step();
}

void BucketTracker::start_step() {
    missing_.clear();
    for (const Bucket& b : buckets_) missing_.push_back(b.count);
    ready_.assign(bucket_of_.size(), false);
}

int BucketTracker::ready(int buffer) {
    if (buffer < 0 || static_cast<size_t>(buffer) >= bucket_of_.size())
        throw std::runtime_error("gradient ready: no buffer " + std::to_string(buffer) + " (of " +
                                 std::to_string(bucket_of_.size()) + ")");
    if (ready_[static_cast<size_t>(buffer)])
        throw std::runtime_error("gradient ready: buffer " + std::to_string(buffer) +
                                 " readied twice in one step");
    ready_[static_cast<size_t>(buffer)] = true;
    const int b = bucket_of_[static_cast<size_t>(buffer)];
    return --missing_[static_cast<size_t>(b)] == 0 ? b : -1;
}

std::vector<int> BucketTracker::incomplete() const {
    std::vector<int> out;
    for (size_t b = 0; b < missing_.size(); ++b)
        if (missing_[b] > 0) out.push_back(static_cast<int>(b));
    return out;
}

}  // namespace harness::parallel
