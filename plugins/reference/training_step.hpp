// Executes a layer graph (hb_graph) for training: forward in the graph's order, then backward in
// reverse, keeping every value for the backward pass and the gradient of every trainable tensor.
#pragma once

#include "buffer_pool.hpp"
#include "gemm.hpp"
#include "hb/graph.hpp"
#include "hb/host_state.hpp"
#include "hb/profile.hpp"
#include "layers.hpp"
#include "random_rounding.hpp"
#include "thread_pool.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hb_reference {

struct TensorInfo {
    std::string name;
    bool trainable = false;
    int64_t elements = 0;
    int layer = -1;  // the layer that uses it, -1 when none does
};

template <class T>
class TrainingStep {
public:
    // Copies what it needs from `graph` (hb::import_graph's, include/hb/graph.hpp); computes with
    // the tensors of `state` and writes its gradients there.
    TrainingStep(const hb::Graph& graph, hb::HostState<T>& state, ThreadPool& pool,
                 TileKernel kernel = fastest_tile_kernel<T>());

    int num_tensors() const { return state_.num_tensors(); }
    const TensorInfo& tensor_info(int i) const { return tensor_info_[i]; }
    std::vector<T>& tensor(int i) { return state_.tensor(i); }
    // The gradient of a trainable tensor after backward(); empty for running statistics.
    std::vector<T>& gradient(int i) { return state_.gradient(i); }
    // The trainable tensors in the order backward() completes their gradients: those no layer
    // uses, then by the first layer that uses them, last first.
    const std::vector<int>& gradient_order() const { return gradient_order_; }

    int64_t input_elements() const;
    int64_t target_elements() const;

    // One training-mode forward pass on a batch (input N x 3 x S x S, target = target_shape):
    // updates the BN running statistics and returns the loss, the sum of every mse_loss output.
    // Layers before `first_layer` keep their outputs from the previous pass on the same batch, so
    // a caller that changed only tensors of later layers can recompute just what depends on them.
    double forward(const T* input, const T* target, int first_layer = 0);
    // Gradients of the last forward's loss with respect to every trainable tensor. `final` (may
    // be empty) hears each gradient as it is complete, by its position in gradient_order().
    void backward(const std::function<void(int)>& final = {});
    // Whether backward() also computes the gradient of the graph's input (off: the input needs
    // none), and that gradient after the last backward().
    void set_input_gradient(bool wanted) { input_gradient_wanted_ = wanted; }
    const std::vector<T>& input_gradient() const { return input_gradient_; }
    // Every layer's results (outputs, the gradients it sends back, the parameter and input
    // gradients) rounded randomly (random_rounding.hpp) from the next forward() on; off by default.
    void set_random_rounding(const RandomRounding& r) { rounding_ = r; }

    // The events of a profiled step (docs/design.md §3 "Profiling"): forward and backward add
    // one per layer pass (a convolution's backward two: weights, then data), the caller its own.
    hb::EventLog& event_log() { return events_; }

    const T* value(int v) const;
    Dims value_dims(int v) const { return value_dims_[v]; }

    TileKernel tile_kernel() const { return gemm_.kernel(); }
    int pointwise_convolutions() const;
    int im2col_convolutions() const;
    uint64_t workspace_bytes() const { return workspace_.size() * sizeof(T); }
    // Every buffer this network allocated: values, scratch (at their peak); not the state's.
    uint64_t allocated_bytes() const;

private:
    // The SDK's layer, with what this backend works out for it and keeps between passes.
    struct Layer : hb::Layer {
        explicit Layer(const hb::Layer& layer) : hb::Layer(layer) {}
        ConvShape conv;             // conv2d
        BatchNormParams batchnorm;  // batchnorm
        BatchStatistics statistics;
        double loss = 0;  // mse_loss: the output, in double
    };

    void forward_layer(int index);
    // Where in this pass a result is rounded randomly (random_rounding.hpp): the layer, what
    // (0 its output, 1 a gradient it sends an input, 2 a parameter's gradient, 3 a batch norm's
    // statistics) and which.
    uint64_t site(int layer, int what, int index) const;
    // Rounds `data` at site `at`, when rounding randomly, its elements sums whose rounding is
    // `sums` roundings at the scale of their terms (random_rounding.hpp).
    void round_randomly_at(uint64_t at, std::vector<T>& data, double sums);
    // That number for the layer's forward output and for the gradients it sends its inputs: a
    // convolution's sqrt(products summed), as its library chooses the order; a batch norm's,
    // a sum's and an upsampling's gradient 1; 0 for what sums nothing. A parameter's gradient 1.
    double forward_sums(const Layer& layer) const;
    double input_gradient_sums(const Layer& layer) const;
    void backward_layer(int index);
    T* tensor_data(int i) { return i < 0 ? nullptr : state_.tensor(i).data(); }
    T* gradient_data(int i) { return i < 0 ? nullptr : state_.gradient(i).data(); }
    // The gradient buffer of value v (zeroed when first used); null for the graph's input unless
    // its gradient is wanted.
    T* value_gradient(int v);

    hb::HostState<T>& state_;
    ThreadPool& pool_;
    Gemm<T> gemm_;
    std::vector<Layer> layers_;
    std::vector<Dims> value_dims_;
    std::vector<std::vector<T>> values_;           // one per value; empty for the graph's input
    std::vector<std::vector<T>> value_gradients_;  // live only during backward()
    BufferPool<T> gradient_pool_;
    std::vector<TensorInfo> tensor_info_;
    std::vector<int> gradient_order_;
    std::vector<int> completed_by_;  // per gradient_order() entry: the layer that completes it
    std::vector<T> workspace_;
    int input_ = -1;
    bool input_gradient_wanted_ = false;
    std::vector<T> input_gradient_;
    Dims target_dims_;
    const T* input_data_ = nullptr;
    const T* target_data_ = nullptr;
    bool forward_done_ = false;
    hb::EventLog events_;
    RandomRounding rounding_;
    uint64_t passes_ = 0;  // forward passes so far: each rounds at sites of its own
};

extern template class TrainingStep<float>;
extern template class TrainingStep<double>;

}  // namespace hb_reference
