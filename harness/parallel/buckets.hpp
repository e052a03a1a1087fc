// Gradient buckets (docs/parallel.md): consecutive gradient buffers, in the order the backward
// pass completes them, all-reduced together once every one of them is final, as PyTorch's
// DistributedDataParallel does.
#pragma once

#include <cstdint>
#include <vector>

namespace harness::parallel {

struct Bucket {
    int first = 0, count = 0;  // buffers [first, first + count) of the plugin's list
    int64_t elements = 0;      // float32 values in all of them
};

// Consecutive buffers (of `elements` floats each, in list order) up to `bucket_bytes` a bucket; a
// buffer larger than that is a bucket of its own.
std::vector<Bucket> plan_buckets(const std::vector<int64_t>& elements, int64_t bucket_bytes);

// Which buckets a step's ready buffers complete. Each buffer must be readied once per step.
class BucketTracker {
public:
    explicit BucketTracker(const std::vector<Bucket>& buckets);
    void start_step();
    // Buffer `buffer` is final; returns the bucket it completes, or -1. Throws
    // std::runtime_error for an index out of range or a buffer readied twice in a step.
    int ready(int buffer);
    // The buckets not complete this step, in order.
    std::vector<int> incomplete() const;

private:
    std::vector<int> bucket_of_;
    std::vector<int> missing_;  // per bucket, buffers not yet ready this step
    std::vector<bool> ready_;
    std::vector<Bucket> buckets_;
};

}  // namespace harness::parallel
