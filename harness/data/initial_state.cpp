#include "data/initial_state.hpp"

#include "data/generator.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace harness::data {

namespace {

HostTensor conv_init(const model::Graph& graph, const model::Tensor& t, uint64_t seed) {
    const model::Layer& layer = graph.layers.at(static_cast<size_t>(t.layer));
    const int64_t fan_in = int64_t{layer.in_channels} * layer.kernel * layer.kernel;
    // sqrt and the division are correctly rounded in double, so the bound is the same everywhere.
    const auto bound = static_cast<float>(1.0 / std::sqrt(static_cast<double>(fan_in)));
    return uniform(seed, t.name, t.elements(), -bound, bound);
}

float batchnorm_init(model::TensorRole role) {
    switch (role) {
        case model::TensorRole::weight:
            return 1.0f;
        case model::TensorRole::bias:
            return 0.0f;
        case model::TensorRole::running_mean:
            return 0.0f;
        case model::TensorRole::running_var:
            return 1.0f;
    }
    return 0.0f;
}

}  // namespace

std::vector<HostTensor> initial_state(const model::Graph& graph, uint64_t seed) {
    std::vector<HostTensor> state;
    state.reserve(graph.tensors.size());
    for (const model::Tensor& t : graph.tensors) {
        const model::Layer& layer = graph.layers.at(static_cast<size_t>(t.layer));
        switch (layer.kind) {
            case model::LayerKind::conv2d:
                state.push_back(conv_init(graph, t, seed));
                break;
            case model::LayerKind::batchnorm:
                state.emplace_back(static_cast<size_t>(t.elements()), batchnorm_init(t.role));
                break;
            default:
                throw std::invalid_argument("initial_state: tensor '" + t.name +
                                            "' belongs to a layer kind without state (" +
                                            model::to_string(layer.kind) + ")");
        }
    }
    return state;
}

namespace {

// Inputs of one batch: U[0, 1) per pixel, or, with `block` > 1, one draw per block x block pixels
// (and channel and image), the stream's values taken in the order of the blocks.
HostTensor make_input(uint64_t seed, const std::string& name, const model::Shape& shape,
                      int block) {
    if (block <= 1) return uniform(seed, name, model::elements(shape), 0.0f, 1.0f);
    const int64_t n = shape.at(0), c = shape.at(1), h = shape.at(2), w = shape.at(3);
    if (h % block != 0 || w % block != 0)
        throw std::invalid_argument("make_batches: input block " + std::to_string(block) +
                                    " does not divide the input's size");
    const int64_t bh = h / block, bw = w / block;
    const std::vector<float> draws = uniform(seed, name, n * c * bh * bw, 0.0f, 1.0f);
    HostTensor input(static_cast<size_t>(n * c * h * w));
    for (int64_t p = 0; p < n * c; ++p)
        for (int64_t y = 0; y < h; ++y)
            for (int64_t x = 0; x < w; ++x)
                input[static_cast<size_t>((p * h + y) * w + x)] =
                    draws[static_cast<size_t>((p * bh + y / block) * bw + x / block)];
    return input;
}

}  // namespace

Batches make_batches(const model::Graph& graph, uint64_t seed, int count, int input_block) {
    if (count < 1) throw std::invalid_argument("make_batches: need at least one batch");
    const model::Shape& input_shape = graph.values.at(static_cast<size_t>(graph.input)).shape;
    const int64_t target_elements = model::elements(graph.target_shape);
    Batches batches;
    for (int b = 0; b < count; ++b) {
        const std::string index = std::to_string(b);
        batches.inputs.push_back(make_input(seed, "input." + index, input_shape, input_block));
        batches.targets.push_back(uniform(seed, "target." + index, target_elements, 0.0f, 1.0f));
    }
    return batches;
}

}  // namespace harness::data
