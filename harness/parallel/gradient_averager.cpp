#include "parallel/gradient_averager.hpp"

#include <utility>

namespace harness::parallel {

GradientAverager::GradientAverager(std::unique_ptr<Communicator> communicator,
                                   std::vector<Bucket> buckets, bool overlap)
    : communicator_(std::move(communicator)),
      buckets_(std::move(buckets)),
      tracker_(buckets_),
      overlap_(overlap) {}

void GradientAverager::timed(const std::function<void()>& work) {
    const auto start = std::chrono::steady_clock::now();
    work();
    step_ms_ +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

std::function<void(int32_t)> GradientAverager::ready_callback() {
    if (!overlap_) return {};
    return [this](int32_t buffer) {
        timed([&] {
            const int bucket = tracker_.ready(buffer);
            if (bucket >= 0) communicator_->start(bucket);
        });
    };
}

void GradientAverager::start_step() {
    tracker_.start_step();
    step_ms_ = 0;
}

double GradientAverager::finish_step() {
    timed([&] {
        // A plugin's buffers are all final when forward_backward returns, called back or not.
        for (int bucket : tracker_.incomplete()) communicator_->start(bucket);
        communicator_->finish();
    });
    return step_ms_;
}

}  // namespace harness::parallel
