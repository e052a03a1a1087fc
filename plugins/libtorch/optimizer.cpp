#include "optimizer.hpp"

#include "hb/plugin.hpp"
#include "op_profiler.hpp"

#include <ATen/Functions.h>
#include <ATen/core/grad_mode.h>

namespace hb_libtorch {

RmsProp::RmsProp(const hb_optimizer& settings, std::vector<at::Tensor> parameters,
                 std::vector<int32_t> layers, bool multi_tensor)
    : settings_(settings),
      multi_tensor_(multi_tensor),
      parameters_(std::move(parameters)),
      layers_(std::move(layers)) {
    layers_.resize(parameters_.size(), -1);
    at::NoGradGuard no_grad;
    for (const at::Tensor& p : parameters_) {
        square_averages_.push_back(at::full_like(p, settings_.initial_square_average));
        if (settings_.momentum != 0) momentum_buffers_.push_back(at::zeros_like(p));
    }
}

void RmsProp::step(OpProfiler* profiler) {
    at::NoGradGuard no_grad;
    if (multi_tensor_) {
        if (profiler) profiler->begin(profile::Part::update);
        step_multi_tensor();
        if (profiler) profiler->end();
    } else {
        step_each(profiler);
    }
}

// The same operations as step_each, each applied to every parameter at once.
void RmsProp::step_multi_tensor() {
    const double lr = settings_.learning_rate;
    const double alpha = settings_.alpha;
    const double eps = settings_.eps;
    const double momentum = settings_.momentum;
    const bool torch = settings_.variant == HB_RMSPROP_TORCH;
    std::vector<at::Tensor> g;
    g.reserve(parameters_.size());
    for (const at::Tensor& p : parameters_) {
        if (!p.grad().defined()) throw hb::Error("optimizer: a parameter has no gradient");
        g.push_back(p.grad());
    }
    if (settings_.weight_decay != 0) g = at::_foreach_add(g, parameters_, settings_.weight_decay);
    at::_foreach_mul_(square_averages_, alpha);
    at::_foreach_addcmul_(square_averages_, g, g, 1 - alpha);
    std::vector<at::Tensor> denominator;
    if (torch) {
        denominator = at::_foreach_sqrt(square_averages_);
        at::_foreach_add_(denominator, eps);
    } else {
        denominator = at::_foreach_add(square_averages_, eps);
        at::_foreach_sqrt_(denominator);
    }
    if (momentum == 0) {
        at::_foreach_addcdiv_(parameters_, g, denominator, -lr);
    } else if (torch) {
        at::_foreach_mul_(momentum_buffers_, momentum);
        at::_foreach_addcdiv_(momentum_buffers_, g, denominator);
        at::_foreach_add_(parameters_, momentum_buffers_, -lr);
    } else {
        at::_foreach_mul_(momentum_buffers_, momentum);
        at::_foreach_addcdiv_(momentum_buffers_, g, denominator, lr);
        at::_foreach_sub_(parameters_, momentum_buffers_);
    }
}

void RmsProp::step_each(OpProfiler* profiler) {
    const double lr = settings_.learning_rate;
    const double alpha = settings_.alpha;
    const double eps = settings_.eps;
    const double momentum = settings_.momentum;
    const bool torch = settings_.variant == HB_RMSPROP_TORCH;
    for (size_t i = 0; i < parameters_.size(); ++i) {
        if (profiler) profiler->begin(profile::Part::update, layers_[i]);
        at::Tensor& p = parameters_[i];
        at::Tensor g = p.grad();
        if (!g.defined()) throw hb::Error("optimizer: a parameter has no gradient");
        if (settings_.weight_decay != 0) g = g.add(p, settings_.weight_decay);
        at::Tensor& v = square_averages_[i];
        v.mul_(alpha).addcmul_(g, g, 1 - alpha);
        // torch: sqrt(v) + eps; tensorflow: sqrt(v + eps).
        const at::Tensor denominator = torch ? v.sqrt().add_(eps) : v.add(eps).sqrt_();
        if (momentum == 0) {
            p.addcdiv_(g, denominator, -lr);
        } else if (torch) {
            at::Tensor& buffer = momentum_buffers_[i];
            buffer.mul_(momentum).addcdiv_(g, denominator);
            p.add_(buffer, -lr);
        } else {
            at::Tensor& buffer = momentum_buffers_[i];
            buffer.mul_(momentum).addcdiv_(g, denominator, lr);
            p.sub_(buffer);
        }
        if (profiler) profiler->end();
    }
}

void RmsProp::load_square_averages(const float* const* buffers) {
    at::NoGradGuard no_grad;
    for (size_t i = 0; i < square_averages_.size(); ++i) {
        at::Tensor& v = square_averages_[i];
        v.copy_(at::from_blob(const_cast<float*>(buffers[i]), v.sizes(),
                              at::TensorOptions().dtype(at::kFloat)));
    }
}

}  // namespace hb_libtorch
