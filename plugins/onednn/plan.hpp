// The graph turned into oneDNN primitive descriptors, in forward order: every value gets the
// layout its producer picked (convolutions choose freely, format_tag::any, and every other layer
// keeps its input's layout), so activations and their gradients stay in oneDNN's blocked layouts
// for the whole step. Reorders remain only where a primitive cannot use a value's layout.
// In the plain layout every value is NCHW instead, as a framework's tensors are: convolutions
// still run in the layouts they choose, with their input reordered into it and their output back.
#pragma once

#include "graph.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace hb_onednn {

struct LayerPlan {
    dnnl::convolution_forward::primitive_desc conv;
    dnnl::convolution_backward_data::primitive_desc conv_data;  // when the input has a gradient
    dnnl::convolution_backward_weights::primitive_desc
        conv_weights;                  // when the layer runs backward
    dnnl::memory::desc source;         // conv: the layout its primitives read the input in
    bool reorder_source = false;       // conv: `source` differs from the input value's layout
    dnnl::memory::desc destination;    // conv: the layout its primitives write the output in
    bool reorder_destination = false;  // conv: `destination` differs from the output value's

    // An add whose inputs come from convolutions used by nothing else is computed by those
    // convolutions: the first writes the add's output (after the add's other inputs have been
    // summed into it) and the others accumulate into it with a sum post-op.
    int writes_into = -1;      // conv: the add output it writes, or -1 for its own output
    bool accumulates = false;  // conv: its forward primitive adds to what the output holds
    std::vector<int> initial;  // conv: values summed into the add output before it runs
    dnnl::sum::primitive_desc initial_sum;  // conv: for `initial` unless it is one plain copy
    bool computed_by_convolutions = false;  // add: nothing left to run

    dnnl::batch_normalization_forward::primitive_desc batchnorm;
    // Batch norm normalises with statistics computed here (in double) when its layout allows;
    // `batchnorm` then takes them as inputs and the training descriptor only guides backward.
    dnnl::batch_normalization_forward::primitive_desc batchnorm_training;
    int statistics_block = 0;  // channel block of the input layout; 0: oneDNN computes them
    dnnl::batch_normalization_backward::primitive_desc batchnorm_backward;
    dnnl::eltwise_forward::primitive_desc relu;
    dnnl::eltwise_backward::primitive_desc relu_backward;
    dnnl::pooling_forward::primitive_desc pool;
    dnnl::pooling_backward::primitive_desc pool_backward;
    dnnl::resampling_forward::primitive_desc upsample;
    dnnl::resampling_backward::primitive_desc upsample_backward;
    dnnl::sum::primitive_desc sum;
};

// Where a state tensor lives. RMSProp runs elementwise over `master` with the gradient in the same
// layout; a convolution weight in a blocked layout without padding is its own master, otherwise
// the master is plain OIHW and `working` is refreshed from it after every update.
struct TensorPlan {
    int layer = -1;  // the layer using it, -1 when none does
    dnnl::memory::desc master;
    dnnl::memory::desc working;        // conv weights: the forward layout (may equal master)
    dnnl::memory::desc gradient;       // conv weights: the layout backward-weights writes
    dnnl::memory::desc backward_data;  // conv weights: the layout backward-data reads
};

struct Plan {
    std::vector<dnnl::memory::desc> values;  // per value: its layout and its gradient's
    std::vector<bool> stored;                // per value: has a buffer of its own
    std::vector<LayerPlan> layers;
    std::vector<TensorPlan> tensors;
    dnnl::primitive_attr attr;  // user-managed scratchpad, for every primitive
};

// Throws hb::Error naming the layer and the primitive that oneDNN could not create. `plain`:
// every value in NCHW, and no convolution writes into an add's output.
Plan make_plan(const Graph& graph, const Topology& topology, const dnnl::engine& engine,
               bool plain);

[[noreturn]] void throw_creation_error(const std::string& layer, const char* what,
                                       const dnnl::error& e);

// Creates something from oneDNN, turning its errors into hb::Error naming the layer and what was
// being created.
template <class F>
auto create(const std::string& layer, const char* what, F&& make) -> decltype(make()) {
    try {
        return make();
    } catch (const dnnl::error& e) {
        throw_creation_error(layer, what, e);
    }
}

// The primitive of a descriptor, errors reported as by create().
template <class Primitive, class Pd>
dnnl::primitive make_primitive(const std::string& layer, const char* what, const Pd& pd) {
    return create(layer, what, [&] { return dnnl::primitive(Primitive(pd)); });
}

}  // namespace hb_onednn
