// A CUDA graph of one whole training step (forward, backward, update): captured once after a
// warm-up step, then replayed, so a step costs one graph launch instead of hundreds of kernel
// launches. Needs a LibTorch built with CUDA; elsewhere it can only say that it is unsupported.
#pragma once

#include <c10/core/Device.h>

#include <functional>
#include <memory>

namespace hb_libtorch {

class CapturedStep {
public:
    // Whether this build can capture CUDA graphs at all.
    static bool supported();

    // Throws hb::Error(HB_UNSUPPORTED) where supported() is false.
    explicit CapturedStep(const c10::Device& device);
    ~CapturedStep();
    CapturedStep(const CapturedStep&) = delete;
    CapturedStep& operator=(const CapturedStep&) = delete;

    // Runs `work` with the graph's own stream current: capture needs a stream other than the
    // default one, and the warm-up must run where the capture will.
    void on_stream(const std::function<void()>& work);
    // Records the kernels `step` launches (nothing runs); call inside on_stream().
    void capture(const std::function<void()>& step);
    // Launches the captured step on the current stream; call inside on_stream().
    void replay();
    bool captured() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace hb_libtorch
