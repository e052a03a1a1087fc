// The gradients of one session averaged across ranks between the two halves of each step
// (docs/parallel.md): buckets started as the backward pass completes them (or all after it,
// without overlap), and the time the step spends on it.
#pragma once

#include "parallel/buckets.hpp"
#include "parallel/communicator.hpp"

#include <chrono>
#include <functional>
#include <memory>

namespace harness::parallel {

class GradientAverager {
public:
    GradientAverager(std::unique_ptr<Communicator> communicator, std::vector<Bucket> buckets,
                     bool overlap);

    // For forward_backward: hears each buffer as it is final (empty without overlap).
    std::function<void(int32_t)> ready_callback();
    void start_step();
    // After forward_backward: starts what is left, waits for every bucket. Returns the
    // milliseconds this step spent in communication calls, these and the callback's.
    double finish_step();

    Communicator& communicator() { return *communicator_; }
    const std::vector<Bucket>& buckets() const { return buckets_; }

private:
    void timed(const std::function<void()>& work);
    std::unique_ptr<Communicator> communicator_;
    std::vector<Bucket> buckets_;
    BucketTracker tracker_;
    bool overlap_;
    double step_ms_ = 0;
};

}  // namespace harness::parallel
