// The walk that builds the training step: the variables and the batch, then the forward pass
// (graph_forward.cpp), the gradients (graph_gradients.cpp) and the optimizer (graph_optimizer.cpp),
// in that order; and the names of what it built.
#include "training_step.hpp"

#include <string>

namespace hb_tensorflow {

namespace {

std::vector<int64_t> nhwc(const hb::Dims& d) {
    return {d.n, d.h, d.w, d.c};
}

}  // namespace

TrainingStep::TrainingStep(const hb::Graph& graph, const Settings& settings)
    : ir_(graph), settings_(settings), tf_graph_(TF_NewGraph()) {
    TF_Graph* g = tf_graph_.get();
    for (int i = 0; i < graph.num_layers(); ++i) layer_index_[graph.layers[size_t(i)].name] = i;
    for (const hb::Tensor& t : graph.tensors) {
        const std::string& layer =
            t.layer >= 0 ? graph.layers[size_t(t.layer)].name : std::string();
        state.push_back(variable(t.name, tensorflow_shape(t), layer));
    }

    // The batch: fed each step (host placement, the C-API form of feed_dict), or read from the
    // session's own variables by a fed index (device placement).
    const hb::Dims in = graph.values[size_t(graph.input)];
    const std::vector<int64_t> input_shape = nhwc(in), target_shape = nhwc(graph.target);
    TF_Output target;
    if (settings.placement == HB_PLACEMENT_HOST) {
        input_feed = out(Op(g, "Placeholder", "data/input", "")
                             .type("dtype", TF_FLOAT)
                             .shape("shape", input_shape)
                             .finish());
        target_feed = out(Op(g, "Placeholder", "data/target", "")
                              .type("dtype", TF_FLOAT)
                              .shape("shape", target_shape)
                              .finish());
        input = input_feed;
        target = target_feed;
    } else {
        auto batches = [](std::vector<int64_t> shape) {
            shape.insert(shape.begin(), -1);
            return shape;
        };
        inputs = variable("data/inputs", batches(input_shape), "");
        targets = variable("data/targets", batches(target_shape), "");
        batch_index = out(Op(g, "Placeholder", "data/index", "")
                              .type("dtype", TF_INT32)
                              .shape("shape", {})
                              .finish());
        auto gather = [&](const Variable& v, const char* name) {
            return out(Op(g, "ResourceGather", name, "")
                           .input(v.handle)
                           .input(batch_index)
                           .type("dtype", TF_FLOAT)
                           .type("Tindices", TF_INT32)
                           .finish());
        };
        input = gather(inputs, "data/input");
        target = gather(targets, "data/target");
    }
    build_forward(target);
    build_gradients();
    build_optimizer();
}

int TrainingStep::layer_of(const std::string& node_name) const {
    std::string_view rest = node_name;
    for (std::string_view prefix : {"gradients/", "update/"})
        if (rest.substr(0, prefix.size()) == prefix) rest.remove_prefix(prefix.size());
    const std::string first(rest.substr(0, rest.find('/')));
    auto it = layer_index_.find(first);
    if (it != layer_index_.end()) return it->second;
    // An update or a variable is named after its tensor, "<layer>.weight/...".
    const size_t dot = first.rfind('.');
    if (dot != std::string::npos) {
        it = layer_index_.find(first.substr(0, dot));
        if (it != layer_index_.end()) return it->second;
    }
    return -1;
}

}  // namespace hb_tensorflow
