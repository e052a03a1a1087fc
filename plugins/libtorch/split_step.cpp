#include "split_step.hpp"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>

#include <algorithm>
#include <memory>

namespace hb_libtorch {

class GradientReadiness::FinalGradientHook final : public torch::autograd::FunctionPostHook {
public:
    FinalGradientHook(GradientReadiness& readiness, size_t buffer)
        : readiness_(readiness), buffer_(buffer) {}
    torch::autograd::variable_list operator()(
        const torch::autograd::variable_list& outputs,
        const torch::autograd::variable_list& /*inputs*/) override {
        if (std::this_thread::get_id() == readiness_.caller_) readiness_.tell(buffer_);
        return outputs;
    }

private:
    GradientReadiness& readiness_;
    size_t buffer_;
};

void GradientReadiness::watch(const at::Tensor& p) {
    auto accumulator = torch::autograd::impl::grad_accumulator(p);
    accumulator->add_post_hook(std::make_unique<FinalGradientHook>(*this, told_.size()));
    accumulators_.push_back(std::move(accumulator));
    told_.push_back(0);
}

void GradientReadiness::tell(size_t buffer) {
    if (told_[buffer]) return;
    told_[buffer] = 1;
    if (listener_) (*listener_)(static_cast<int32_t>(buffer));
}

void GradientReadiness::tell_rest() {
    for (size_t i = 0; i < told_.size(); ++i) tell(i);
}

GradientReadiness::Listening::Listening(GradientReadiness& readiness,
                                        const hb::GradientReady* ready)
    : readiness_(readiness) {
    std::fill(readiness_.told_.begin(), readiness_.told_.end(), 0);
    readiness_.listener_ = ready;
    readiness_.caller_ = std::this_thread::get_id();
}

GradientReadiness::Listening::~Listening() {
    readiness_.listener_ = nullptr;
}

}  // namespace hb_libtorch
