// Known-bad backends: the reference backend's kernels driven by a small executor of their own,
// built once per defect with DEFECT_<name> defined, each wrong in exactly one way that a real
// backend could be. `harness check` must call every one of them a mismatch and name the quantity
// where the defect lives (tests/known_bad_test.cpp). Without a DEFECT_ definition this computes
// the reference's step.
//
//   dropped_accumulation   a value used twice gets only the gradient of its first consumer
//   bn_epsilon             batch norm with eps 1e-3 (Keras' default) instead of the graph's
//   bn_backward_epsilon    batch norm's backward pass with eps doubled (its forward pass right)
//   biased_running_var     running variance updated with the biased batch variance
//   bias_gradient_before_bn  the bias gradient of every convolution from which a batch norm is
//                          reachable is zeroed (right only for one that reaches the loss through
//                          batch norms alone: wrong for stack0.out, which is also a head)
//   frozen_tensor          stack0.res.conv2.weight is never updated
//   frozen_tail            the last 8 elements of stack0.res.conv2.weight are never updated
//   rmsprop_eps            Torch's RMSProp with eps inside the square root
//   rmsprop_momentum       the momentum buffer is never read (momentum acts as 0)
//   rmsprop_weight_decay   weight decay ignored
//   rmsprop_variant        TensorFlow's variant with Torch's start: the square average from 0, not
//                          from the optimizer's initial value (1)
//   last_max_pooling       max pooling sends the gradient to the last maximum of a tied window,
//                          not the first
//   bn_epsilon_behind_option  bn_epsilon, only with its option approximate_batchnorm: true (the
//                          default is false); checked on check-tiny. Its option vector_kernels:
//                          true is refused (HB_UNSUPPORTED), as a value a device lacks
#include "hb/cpu.hpp"
#include "hb/graph.hpp"
#include "hb/plugin.hpp"
#include "layers.hpp"
#include "thread_pool.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

namespace {

using hb_reference::BatchNormParams;
using hb_reference::BatchStatistics;
using hb_reference::ConvShape;
using hb_reference::Dims;

constexpr const char* kFrozenTensor = "stack0.res.conv2.weight";

std::vector<hb::OptionSpec> defect_options() {
    std::vector<hb::OptionSpec> specs{hb::threads_option()};
#if defined(DEFECT_bn_epsilon_behind_option)
    specs.push_back(hb::checked_on(
        hb::bool_option("approximate_batchnorm", false, "batch norm with eps 1e-3 (the defect)"),
        "check-tiny"));
    specs.push_back(
        hb::checked_on(hb::bool_option("vector_kernels", false,
                                       "vector kernels (refused: this executor has none)"),
                       "check-tiny"));
#endif
    return specs;
}

// RMSProp as docs/design.md §4 states it (the reference's optimizer.cpp), with the defects.
void rmsprop(const hb_optimizer& o, size_t count, float* p, const float* grad, float* v,
             float* buffer) {
    const float lr = o.learning_rate, alpha = o.alpha, eps = o.eps, momentum = o.momentum;
    float decay = o.weight_decay;
    const bool torch = o.variant == HB_RMSPROP_TORCH;
#if defined(DEFECT_rmsprop_weight_decay)
    decay = 0;
#endif
    for (size_t i = 0; i < count; ++i) {
        const float g = decay != 0 ? grad[i] + decay * p[i] : grad[i];
        v[i] = alpha * v[i] + (1 - alpha) * (g * g);
#if defined(DEFECT_rmsprop_eps)
        const float denominator = torch ? std::sqrt(v[i] + eps) : std::sqrt(v[i]) + eps;
#else
        const float denominator = torch ? std::sqrt(v[i]) + eps : std::sqrt(v[i] + eps);
#endif
#if defined(DEFECT_rmsprop_momentum)
        const bool use_momentum = false;
#else
        const bool use_momentum = momentum != 0;
#endif
        if (!use_momentum) {
            p[i] -= lr * (g / denominator);
        } else if (torch) {
            buffer[i] = momentum * buffer[i] + g / denominator;
            p[i] -= lr * buffer[i];
        } else {
            buffer[i] = momentum * buffer[i] + lr * g / denominator;
            p[i] -= buffer[i];
        }
    }
}

// The gradient of 2x2 max pooling, sent to the first maximum of each window in row-major order
// (the graph's rule), or to the last with DEFECT_last_max_pooling.
void maxpool2d_backward(const Dims& d, const float* x, const float* dy, float* dx) {
    for (int64_t p = 0; p < d.n * d.c; ++p)
        for (int64_t oh = 0; oh < d.h / 2; ++oh)
            for (int64_t ow = 0; ow < d.w / 2; ++ow) {
                const int64_t top = p * d.plane() + 2 * oh * d.w + 2 * ow;
                int64_t arg = top;
                for (int64_t k : {top + 1, top + d.w, top + d.w + 1})
#if defined(DEFECT_last_max_pooling)
                    if (x[k] >= x[arg]) arg = k;
#else
                    if (x[k] > x[arg]) arg = k;
#endif
                dx[arg] += dy[(p * (d.h / 2) + oh) * (d.w / 2) + ow];
            }
}

class DefectSession : public hb::Session {
public:
    explicit DefectSession(const hb_session_desc& desc)
        : graph_(hb::import_graph(*desc.graph, {"defect", true})),
          optimizer_(*desc.optimizer),
          pool_(1),
          gemm_(pool_, hb_reference::TileKernel::portable),
          input_gradient_wanted_(hb::wants_input_gradient(desc)) {
        hb::check_session_desc(desc);
        hb::require_cpu(desc, "the defect backend");
        const hb::Options options(desc.num_options, desc.options, defect_options());
        options.get_threads();
#if defined(DEFECT_bn_epsilon)
        bn_epsilon_defect_ = true;
#elif defined(DEFECT_bn_epsilon_behind_option)
        bn_epsilon_defect_ = options.get_bool("approximate_batchnorm");
        if (options.get_bool("vector_kernels"))
            throw hb::Error("vector_kernels: this executor has no vector kernels", HB_UNSUPPORTED);
#endif
#if defined(DEFECT_rmsprop_variant)
        const float initial_square_average = 0;
#else
        const float initial_square_average = optimizer_.initial_square_average;
#endif
        for (const hb::Tensor& t : graph_.tensors) {
            const auto n = static_cast<size_t>(t.elements);
            tensors_.emplace_back(n, 0.0f);
            gradients_.emplace_back(t.trainable ? n : 0, 0.0f);
            square_average_.emplace_back(t.trainable ? n : 0, initial_square_average);
            momentum_buffer_.emplace_back(t.trainable ? n : 0, 0.0f);
        }
        int64_t workspace = 0;
        conv_.resize(graph_.layers.size());
        for (size_t i = 0; i < graph_.layers.size(); ++i) {
            const hb::Layer& l = graph_.layers[i];
            if (l.kind != HB_LAYER_CONV2D) continue;
            conv_[i] = ConvShape{graph_.values[l.inputs[0]], graph_.values[l.output], l.kernel,
                                 l.stride, l.padding};
            workspace = std::max(workspace, conv_[i].workspace_elements());
        }
        workspace_.resize(static_cast<size_t>(workspace));
        statistics_.resize(graph_.layers.size());
        losses_.resize(graph_.layers.size());
        values_.resize(graph_.values.size());
        for (const hb::Layer& l : graph_.layers)
            values_[l.output].assign(static_cast<size_t>(graph_.values[l.output].elements()), 0);
        zero_bias_gradient_.assign(graph_.layers.size(), false);
#if defined(DEFECT_bias_gradient_before_bn)
        for (size_t l = 0; l < graph_.layers.size(); ++l)
            zero_bias_gradient_[l] = graph_.layers[l].kind == HB_LAYER_CONV2D &&
                                     reaches_batchnorm(graph_.layers[l].output);
#endif
    }

    void load_state(const float* const* tensors) override {
        for (size_t i = 0; i < tensors_.size(); ++i)
            std::copy(tensors[i], tensors[i] + tensors_[i].size(), tensors_[i].begin());
    }
    void set_batches(int32_t count, const float* const* inputs,
                     const float* const* targets) override {
        const auto input_size = static_cast<size_t>(graph_.values[graph_.input].elements());
        const auto target_size = static_cast<size_t>(graph_.target.elements());
        for (int32_t b = 0; b < count; ++b) {
            inputs_.emplace_back(inputs[b], inputs[b] + input_size);
            targets_.emplace_back(targets[b], targets[b] + target_size);
        }
    }

    hb::StepResult step(int32_t batch) override {
        input_ = inputs_[static_cast<size_t>(batch)].data();
        target_ = targets_[static_cast<size_t>(batch)].data();
        hb::StepResult result;
        result.loss = 0;
        for (size_t l = 0; l < graph_.layers.size(); ++l) forward(l);
        for (size_t l = 0; l < graph_.layers.size(); ++l)
            if (graph_.layers[l].kind == HB_LAYER_MSE_LOSS) result.loss += losses_[l];
        backward();
        for (size_t i = 0; i < tensors_.size(); ++i) {
            if (!graph_.tensors[i].trainable) continue;
            size_t count = tensors_[i].size();
#if defined(DEFECT_frozen_tensor)
            if (graph_.tensors[i].name == kFrozenTensor) continue;
#elif defined(DEFECT_frozen_tail)
            if (graph_.tensors[i].name == kFrozenTensor) count -= 8;
#endif
            rmsprop(optimizer_, count, tensors_[i].data(), gradients_[i].data(),
                    square_average_[i].data(), momentum_buffer_[i].data());
        }
        return result;
    }

    void read_state(float* const* tensors) override {
        for (size_t i = 0; i < tensors_.size(); ++i)
            std::copy(tensors_[i].begin(), tensors_[i].end(), tensors[i]);
    }
    void read_gradients(float* const* gradients) override {
        for (size_t i = 0; i < tensors_.size(); ++i)
            if (graph_.tensors[i].trainable && gradients[i])
                std::copy(gradients_[i].begin(), gradients_[i].end(), gradients[i]);
    }
    void read_input_gradient(float* gradient) override {
        const std::vector<float>& g = value_gradients_[graph_.input];
        if (g.empty())
            std::fill_n(gradient, graph_.values[graph_.input].elements(), 0.0f);
        else
            std::copy(g.begin(), g.end(), gradient);
    }
    std::string manifest_json() override {
        return R"({"math": "fp32", "threads": 1})";
    }

private:
    const float* value(int v) const {
        return v == graph_.input ? input_ : values_[v].data();
    }
    float* tensor(int i) {
        return i < 0 ? nullptr : tensors_[i].data();
    }
    float* gradient(int i) {
        return i < 0 ? nullptr : gradients_[i].data();
    }

    // True when a batch norm consumes `v` or anything computed from it.
    bool reaches_batchnorm(int v) const {
        for (const hb::Layer& l : graph_.layers)
            if (std::find(l.inputs.begin(), l.inputs.end(), v) != l.inputs.end() &&
                (l.kind == HB_LAYER_BATCHNORM || reaches_batchnorm(l.output)))
                return true;
        return false;
    }

    void forward(size_t index) {
        const hb::Layer& l = graph_.layers[index];
        const float* x = value(l.inputs[0]);
        const Dims d = graph_.values[l.inputs[0]];
        float* y = values_[l.output].data();
        switch (l.kind) {
            case HB_LAYER_CONV2D:
                hb_reference::conv2d_forward(gemm_, conv_[index], x, tensor(l.weight),
                                             tensor(l.bias), y, workspace_.data());
                break;
            case HB_LAYER_BATCHNORM: {
                BatchNormParams params{l.momentum, l.eps};
                if (bn_epsilon_defect_) params.eps = 1e-3;
#if defined(DEFECT_biased_running_var)
                const std::vector<float> before = tensors_[l.running_var];
#endif
                hb_reference::batchnorm_forward(pool_, d, params, x, tensor(l.weight),
                                                tensor(l.bias), y, tensor(l.running_mean),
                                                tensor(l.running_var), statistics_[index]);
#if defined(DEFECT_biased_running_var)
                // The update made again with the biased variance instead of the unbiased.
                float* running_var = tensor(l.running_var);
                for (int64_t c = 0; c < d.c; ++c) {
                    const double inv_std = statistics_[index].inv_std[c];
                    const double biased = 1 / (inv_std * inv_std) - params.eps;
                    running_var[c] = static_cast<float>((1 - params.momentum) * before[c] +
                                                        params.momentum * biased);
                }
#endif
                break;
            }
            case HB_LAYER_RELU:
                hb_reference::relu_forward(pool_, d.elements(), x, y);
                break;
            case HB_LAYER_MAXPOOL2D:
                hb_reference::maxpool2d_forward(pool_, d, x, y);
                break;
            case HB_LAYER_UPSAMPLE:
                hb_reference::upsample_forward(pool_, d, x, y);
                break;
            case HB_LAYER_ADD: {
                std::vector<const float*> inputs;
                for (int v : l.inputs) inputs.push_back(value(v));
                hb_reference::add_forward(pool_, d.elements(), inputs, y);
                break;
            }
            case HB_LAYER_MSE_LOSS:
                losses_[index] =
                    hb_reference::mse_loss_forward(d.elements(), x, target_, l.loss_weight);
                y[0] = static_cast<float>(losses_[index]);
                break;
        }
    }

    // Whether the backward pass computes the gradient of value v.
    bool needs_gradient(int v) const {
        return v != graph_.input || input_gradient_wanted_;
    }

    // The gradient buffer of value v, zeroed when first used; null when it needs none.
    float* value_gradient(int v) {
        if (!needs_gradient(v)) return nullptr;
        std::vector<float>& g = value_gradients_[v];
        if (g.empty()) {
            g.assign(static_cast<size_t>(graph_.values[v].elements()), 0.0f);
        } else {
#if defined(DEFECT_dropped_accumulation)
            std::fill(g.begin(), g.end(), 0.0f);  // overwrites what the later consumer sent
#endif
        }
        return g.data();
    }

    void backward() {
        for (auto& g : gradients_) std::fill(g.begin(), g.end(), 0.0f);
        value_gradients_.assign(graph_.values.size(), {});
        for (size_t index = graph_.layers.size(); index-- > 0;) {
            const hb::Layer& l = graph_.layers[index];
            if (l.kind != HB_LAYER_MSE_LOSS && value_gradients_[l.output].empty()) continue;
            const int in = l.inputs[0];
            const float* x = value(in);
            const Dims d = graph_.values[in];
            const float* dy = value_gradients_[l.output].data();
            switch (l.kind) {
                case HB_LAYER_CONV2D:
                    hb_reference::conv2d_backward(gemm_, conv_[index], x, tensor(l.weight), dy,
                                                  static_cast<float*>(nullptr), gradient(l.weight),
                                                  gradient(l.bias), workspace_.data());
                    if (needs_gradient(in))
                        hb_reference::conv2d_backward(
                            gemm_, conv_[index], x, tensor(l.weight), dy, value_gradient(in),
                            static_cast<float*>(nullptr), static_cast<float*>(nullptr),
                            workspace_.data());
                    if (zero_bias_gradient_[index] && l.bias >= 0)
                        std::fill(gradients_[l.bias].begin(), gradients_[l.bias].end(), 0.0f);
                    break;
                case HB_LAYER_BATCHNORM: {
#if defined(DEFECT_bn_backward_epsilon)
                    // 1 / sqrt(var + 2 eps) where the forward pass had 1 / sqrt(var + eps).
                    BatchStatistics stats = statistics_[index];
                    for (double& inv_std : stats.inv_std)
                        inv_std = 1 / std::sqrt(1 / (inv_std * inv_std) + l.eps);
#else
                    const BatchStatistics& stats = statistics_[index];
#endif
                    hb_reference::batchnorm_backward(pool_, d, x, tensor(l.weight), stats, dy,
                                                     value_gradient(in), gradient(l.weight),
                                                     gradient(l.bias));
                    break;
                }
                case HB_LAYER_RELU:
                    if (needs_gradient(in))
                        hb_reference::relu_backward(pool_, d.elements(), x, dy, value_gradient(in));
                    break;
                case HB_LAYER_MAXPOOL2D:
                    if (needs_gradient(in)) maxpool2d_backward(d, x, dy, value_gradient(in));
                    break;
                case HB_LAYER_UPSAMPLE:
                    if (needs_gradient(in))
                        hb_reference::upsample_backward(pool_, d, dy, value_gradient(in));
                    break;
                case HB_LAYER_ADD: {
                    std::vector<float*> dinputs;
                    for (int v : l.inputs) dinputs.push_back(value_gradient(v));
                    hb_reference::add_backward(pool_, d.elements(), dy, dinputs);
                    break;
                }
                case HB_LAYER_MSE_LOSS:
                    if (needs_gradient(in))
                        hb_reference::mse_loss_backward(pool_, d.elements(), x, target_,
                                                        l.loss_weight, value_gradient(in));
                    break;
            }
            value_gradients_[l.output] = {};
        }
    }

    hb::Graph graph_;
    hb_optimizer optimizer_;
    hb_reference::ThreadPool pool_;
    hb_reference::Gemm<float> gemm_;
    std::vector<ConvShape> conv_;  // per layer; meaningful for convolutions
    std::vector<BatchStatistics> statistics_;
    std::vector<double> losses_;
    std::vector<bool> zero_bias_gradient_;
    bool input_gradient_wanted_;
    bool bn_epsilon_defect_ = false;
    std::vector<std::vector<float>> tensors_, gradients_, square_average_, momentum_buffer_;
    std::vector<std::vector<float>> values_, value_gradients_;
    std::vector<float> workspace_;
    std::vector<std::vector<float>> inputs_, targets_;
    const float* input_ = nullptr;
    const float* target_ = nullptr;
};

class DefectPlugin : public hb::Plugin {
public:
    hb::PluginInfo describe() override {
        hb::PluginInfo info;
        info.name = HB_DEFECT_NAME;
        info.version = "1.0.0";
        info.description = "the reference's kernels with one deliberate defect (a test fixture)";
        info.capabilities = HB_CAP_GRADIENTS | HB_CAP_HOST_PLACEMENT | HB_CAP_INPUT_GRADIENT;
        hb::DeviceInfo cpu;
        cpu.name = "cpu";
        cpu.description = hb::cpu_description();
        info.devices = {cpu};
        info.options = defect_options();
        return info;
    }
    std::unique_ptr<hb::Session> create_session(const hb_session_desc& desc) override {
        return std::make_unique<DefectSession>(desc);
    }
};

}  // namespace

HB_PLUGIN(DefectPlugin)
