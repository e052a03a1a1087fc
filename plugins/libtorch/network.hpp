// The layer graph (hb_graph) as LibTorch operations: each layer becomes one ATen call in the
// graph's order, and autograd records the backward pass. Parameters and running statistics are
// device tensors owned here; their storage never moves, so a captured CUDA graph stays valid when
// new values are loaded.
#pragma once

#include "hb/graph.hpp"

#include <ATen/Tensor.h>
#include <c10/core/MemoryFormat.h>
#include <c10/core/TensorOptions.h>

#include <cstdint>
#include <string>
#include <vector>

namespace hb_libtorch {

class OpProfiler;

struct TensorSpec {
    std::string name;
    std::vector<int64_t> shape;  // canonical: OIHW for conv weights
    bool trainable = false;
    int32_t layer = -1;  // the layer it belongs to
};

class Network {
public:
    // Checks the graph (hb::import_graph) and allocates every tensor on the device
    // of `options`, conv weights in `format`. Throws hb::Error naming the offending layer.
    Network(const hb_graph& graph, const c10::TensorOptions& options, c10::MemoryFormat format);

    int num_tensors() const { return static_cast<int>(tensors_.size()); }
    const TensorSpec& spec(int i) const { return specs_[i]; }
    // A parameter (a leaf that requires a gradient) or a running statistic.
    const at::Tensor& tensor(int i) const { return tensors_[i]; }
    std::vector<at::Tensor> trainable_tensors() const;
    // The layer of each of trainable_tensors().
    std::vector<int32_t> trainable_layers() const;

    const std::vector<int64_t>& input_shape() const { return input_shape_; }
    const std::vector<int64_t>& target_shape() const { return target_shape_; }

    // The training-mode forward pass (BN running statistics are updated): returns the loss, the
    // sum of the mse_loss outputs, as a one-element tensor that autograd can differentiate. With
    // a profiler (a profiled step), each layer's forward and the loss sum are parts of the step.
    at::Tensor forward(const at::Tensor& input, const at::Tensor& target,
                       OpProfiler* profiler = nullptr);

    int inplace_relus() const;  // ReLUs that overwrite their input, for the manifest
    int layers() const { return static_cast<int>(layers_.size()); }

private:
    // The SDK's layer, with what this backend works out for it.
    struct Layer : hb::Layer {
        explicit Layer(const hb::Layer& layer) : hb::Layer(layer) {}
        bool in_place = false;      // relu: its input has no other use
        std::vector<int> released;  // values whose last use is this layer
    };

    at::Tensor run_layer(const Layer& layer, const at::Tensor& target);
    void check_output(const Layer& layer, const at::Tensor& y) const;

    std::vector<TensorSpec> specs_;
    std::vector<at::Tensor> tensors_;
    std::vector<Layer> layers_;
    std::vector<std::vector<int64_t>> value_shapes_;
    std::vector<std::string> value_names_;
    std::vector<at::Tensor> values_;  // live during forward() only; autograd keeps what it needs
    std::vector<int64_t> input_shape_, target_shape_;
    int input_ = -1;
    bool shapes_checked_ = false;
};

}  // namespace hb_libtorch
