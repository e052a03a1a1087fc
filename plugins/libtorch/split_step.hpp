// The step in two halves (ABI 2.2): which gradient buffers are final while the backward pass runs,
// told to its listener. On the CPU the autograd engine runs every node on the thread that called
// backward(), so a hook after each parameter's gradient accumulator tells of that buffer as soon
// as its gradient is in it. On CUDA the accumulators run on the engine's device thread, and the
// gradients are ordered before the caller's stream only once backward() returns: then every
// buffer not yet told of is, in the order they were watched.
#pragma once

#include "hb/plugin.hpp"

#include <ATen/Tensor.h>
#include <torch/csrc/autograd/variable.h>

#include <cstddef>
#include <thread>
#include <utility>
#include <vector>

namespace hb_libtorch {

class GradientReadiness {
public:
    GradientReadiness() = default;
    GradientReadiness(const GradientReadiness&) = delete;
    GradientReadiness& operator=(const GradientReadiness&) = delete;

    // The next buffer: the gradient of the parameter `p`, told of when its accumulator has run.
    void watch(const at::Tensor& p);
    // Tells of every buffer not yet told of (after backward() returns).
    void tell_rest();

    // Between its construction and the end of its scope, the backward pass has a listener.
    class Listening {
    public:
        Listening(GradientReadiness& readiness, const hb::GradientReady* ready);
        ~Listening();
        Listening(const Listening&) = delete;
        Listening& operator=(const Listening&) = delete;

    private:
        GradientReadiness& readiness_;
    };

private:
    class FinalGradientHook;
    void tell(size_t buffer);

    // A shared_ptr in LibTorch 1.13, an intrusive_ptr in 2.x: kept, so that they and their hooks
    // last.
    using Accumulator =
        decltype(torch::autograd::impl::grad_accumulator(std::declval<const at::Tensor&>()));
    std::vector<Accumulator> accumulators_;
    std::vector<char> told_;
    const hb::GradientReady* listener_ = nullptr;
    std::thread::id caller_;
};

}  // namespace hb_libtorch
