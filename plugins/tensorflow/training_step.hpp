// The training step as one TensorFlow graph, built from the harness's IR op by op as a TensorFlow
// user's graph would be (docs/backends.md "tensorflow"): resource variables for the parameters,
// the running statistics and the optimizer's slots; the forward pass in NHWC; the loss; the
// gradients from TF_AddGradients (TensorFlow's own autodiff); the update with
// ResourceApplyRMSProp or TensorFlow ops. Every node is named "<layer>/<what>", its gradients
// "gradients/<layer>/...", its update "update/<layer>/...", so that errors and profiles name
// the IR layer each node was built for.
#pragma once

#include "gradient_cache.hpp"
#include "hb/graph.hpp"
#include "layouts.hpp"
#include "options.hpp"
#include "tf.hpp"

#include <map>
#include <string>
#include <vector>

namespace hb_tensorflow {

// Output `index` of `op`.
inline TF_Output out(TF_Operation* op, int index = 0) {
    return TF_Output{op, index};
}

// A resource variable: its handle, one read of it, and the node that assigns it a fed value.
struct Variable {
    TF_Output handle{};
    TF_Output read{};
    TF_Output value{};  // the placeholder `assign` reads
    TF_Operation* assign = nullptr;
    std::vector<int64_t> shape;  // TensorFlow's layout
};

class TrainingStep {
public:
    TrainingStep(const hb::Graph& graph, const Settings& settings);

    TF_Graph* get() const { return tf_graph_.get(); }

    std::vector<Variable> state;            // per IR tensor: parameters and running statistics
    std::vector<Variable> square_average;   // per IR tensor; empty for running statistics
    std::vector<Variable> momentum;         // per IR tensor where the update keeps one
    Variable inputs, targets;               // device placement: every batch, [count, N, H, W, C]
    TF_Output batch_index{};                // device placement: the step's batch (int32 scalar)
    TF_Output input_feed{}, target_feed{};  // host placement: the step's batch
    TF_Output input{};                      // the step's input batch, NHWC
    TF_Output loss{};
    std::vector<TF_Output> gradients;            // per IR tensor; {nullptr} for running statistics
    TF_Output input_gradient{};                  // when the settings ask for it
    std::vector<TF_Operation*> step_targets;     // the update and the running statistics
    std::vector<TF_Operation*> reset_optimizer;  // the slots' initial values
    std::string gradients_source;  // built (in how long) or imported from the cache (which file)

    // The IR layer a node of this graph was built for (its first name component after
    // "gradients/" or "update/"), or -1.
    int layer_of(const std::string& node_name) const;

private:
    // The walk, in this order (graph_build.cpp): the forward pass with the loss, the gradients,
    // the optimizer.
    void build_forward(TF_Output target);
    void build_gradients();
    void build_optimizer();

    // What the gradients are asked for, layer by layer from the loss back: the layer's output
    // differentiated with respect to `xs`, its inputs (IR values) then its trainable tensors.
    struct GradientRequest {
        int layer = 0;
        std::vector<TF_Output> xs;
        std::vector<int> x_values, x_tensors;
    };
    std::vector<GradientRequest> gradient_requests() const;
    std::string requests_text(const std::vector<GradientRequest>& requests) const;
    void add_gradients(const std::vector<GradientRequest>& requests);
    void import_gradients(const GradientSection& section);

    void build_layer(const hb::Layer& layer, int index, TF_Output target);
    TF_Output mse_loss(const hb::Layer& layer, TF_Output y, TF_Output target);
    TF_Output sum(const std::string& name, const std::vector<TF_Output>& terms,
                  const std::string& layer);
    TF_Output conv2d(const hb::Layer& layer, TF_Output x);
    TF_Output batchnorm(const hb::Layer& layer, TF_Output x);
    void running_update(const hb::Layer& layer, int tensor, TF_Output batch_stat, float correction);
    void build_update(int tensor);
    Variable variable(const std::string& name, const std::vector<int64_t>& shape,
                      const std::string& layer);
    TF_Output constant(const std::string& name, float value);
    TF_Output constant_int(const std::string& name, const std::vector<int32_t>& values,
                           const std::vector<int64_t>& shape);
    TF_Output binary(const char* type, const std::string& name, TF_Output a, TF_Output b,
                     const std::string& layer = "");
    TF_Output unary(const char* type, const std::string& name, TF_Output a,
                    const std::string& layer = "");

    const hb::Graph& ir_;
    Settings settings_;
    GraphPtr tf_graph_;
    std::vector<TF_Output> values_;  // per IR value
    // Per IR layer, where it reads its inputs through nodes of its own (an add's terms); else
    // empty: it reads the values themselves.
    std::vector<std::vector<TF_Output>> inputs_;
    std::vector<TF_Output> losses_;
    std::map<std::string, int> layer_index_;
};

}  // namespace hb_tensorflow
