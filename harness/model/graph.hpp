// The layer-graph IR (docs/design.md §4): what the harness builds from a config and hands,
// unchanged, to every backend through the C ABI.
#pragma once

#include "hb/plugin.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace harness::model {

enum class LayerKind { conv2d, batchnorm, relu, maxpool2d, upsample, add, mse_loss };
inline constexpr LayerKind kLayerKinds[] = {
    LayerKind::conv2d,   LayerKind::batchnorm, LayerKind::relu,    LayerKind::maxpool2d,
    LayerKind::upsample, LayerKind::add,       LayerKind::mse_loss};
const char* to_string(LayerKind kind);

using Shape = std::array<int64_t, 4>;  // N, C, H, W
int64_t elements(const Shape& s);
std::string to_string(const Shape& s);  // "[N, C, H, W]"

struct Value {
    std::string name;
    Shape shape{};
};

enum class TensorRole { weight, bias, running_mean, running_var };

struct Tensor {
    std::string name;  // "<layer>.weight", ...
    int layer = -1;
    TensorRole role = TensorRole::weight;
    std::vector<int64_t> shape;
    bool trainable() const { return role == TensorRole::weight || role == TensorRole::bias; }
    int64_t elements() const;
};

struct Layer {
    std::string name;
    LayerKind kind = LayerKind::relu;
    std::vector<int> inputs;  // value indices
    int output = -1;          // value index

    int in_channels = 0, out_channels = 0, kernel = 0, stride = 1, padding = 0;  // conv2d
    int weight = -1, bias = -1;               // tensor indices (conv weight/bias, BN gamma/beta)
    int running_mean = -1, running_var = -1;  // batchnorm
    float momentum = 0.1f, eps = 1e-5f;       // batchnorm
    float loss_weight = 1.0f;                 // mse_loss
};

struct Graph {
    std::vector<Value> values;
    std::vector<Layer> layers;    // execution order
    std::vector<Tensor> tensors;  // construction order
    int input = -1;
    Shape target_shape{};

    int64_t batch() const;            // N of the input value
    int64_t parameter_count() const;  // trainable elements

    // Forward FLOPs for one image, summed over the layers (a multiply-add is 2 FLOPs):
    //   conv2d     2 * Cin * k * k * Cout * Ho * Wo, plus Cout * Ho * Wo for the bias
    //   batchnorm  2 per output element (scale and shift, with the statistics folded in)
    //   relu       1 per element
    //   maxpool2d  3 per output element (comparisons in a 2x2 window)
    //   upsample   0
    //   add        n - 1 per output element for n inputs
    //   mse_loss   3 per input element (subtract, square, accumulate)
    int64_t forward_flops_per_image() const;
    // 3 x forward x batch: backward-data and backward-weights each cost about one forward.
    int64_t training_flops_per_step() const;
    int64_t activation_bytes() const;                    // float32 size of every value, whole batch
    int index_of_layer(const std::string& name) const;   // -1 when absent
    const Layer& layer(const std::string& name) const&;  // throws std::out_of_range
    const Layer& layer(const std::string& name) && = delete;  // would outlive its graph
};

// One layer's share of Graph::forward_flops_per_image.
int64_t forward_flops_per_image(const Graph& graph, const Layer& layer);

// Keeps a C view (hb_graph) of a Graph alive; the Graph must outlive it.
class AbiGraph {
public:
    explicit AbiGraph(const Graph& graph);
    AbiGraph(const AbiGraph&) = delete;
    AbiGraph& operator=(const AbiGraph&) = delete;
    AbiGraph(AbiGraph&&) = default;  // the vectors' buffers, and so graph_'s pointers, move along
    AbiGraph& operator=(AbiGraph&&) = default;
    const hb_graph* get() const { return &graph_; }

private:
    std::vector<int32_t> inputs_;  // every layer's input indices, back to back
    std::vector<hb_value> values_;
    std::vector<hb_tensor> tensors_;
    std::vector<hb_layer> layers_;
    hb_graph graph_{};
};

}  // namespace harness::model
