#include "gradient_cache.hpp"
#include "training_step.hpp"
#include "wire.hpp"

#include <chrono>
#include <cstdio>
#include <set>
#include <string>

namespace hb_tensorflow {
namespace {

std::string name_of(TF_Output o) {
    return std::string(TF_OperationName(o.oper)) + ":" + std::to_string(o.index);
}

std::string seconds_since(std::chrono::steady_clock::time_point start) {
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    char text[32];
    std::snprintf(text, sizeof text, "%.1f s", s);
    return text;
}

}  // namespace

std::vector<TrainingStep::GradientRequest> TrainingStep::gradient_requests() const {
    std::vector<GradientRequest> requests;
    for (int i = ir_.num_layers() - 1; i >= 0; --i) {
        const hb::Layer& layer = ir_.layers[size_t(i)];
        GradientRequest r;
        r.layer = i;
        for (size_t k = 0; k < layer.inputs.size(); ++k) {
            const int v = layer.inputs[k];
            if (v == ir_.input && !settings_.input_gradient) continue;
            const std::vector<TF_Output>& own = inputs_[size_t(i)];
            r.xs.push_back(own.empty() ? values_[size_t(v)] : own[k]);
            r.x_values.push_back(v);
        }
        for (int t : {layer.weight, layer.bias})
            if (t >= 0 && ir_.tensors[size_t(t)].trainable) {
                r.xs.push_back(state[size_t(t)].read);
                r.x_tensors.push_back(t);
            }
        requests.push_back(std::move(r));
    }
    return requests;
}

std::string TrainingStep::requests_text(const std::vector<GradientRequest>& requests) const {
    std::string text = settings_.input_gradient ? "input gradient\n" : "no input gradient\n";
    for (const GradientRequest& r : requests) {
        const hb::Layer& layer = ir_.layers[size_t(r.layer)];
        text += layer.name + " " + name_of(values_[size_t(layer.output)]);
        for (const TF_Output& x : r.xs) text += " " + name_of(x);
        text += "\n";
    }
    return text;
}

// The gradients from the cache where it holds them for this forward graph and these requests;
// else built (add_gradients) and stored for the next worker.
void TrainingStep::build_gradients() {
    const std::vector<GradientRequest> requests = gradient_requests();
    const std::string forward = graph_def_of(tf_graph_.get());
    std::optional<GradientCache> cache;
    std::string no_cache = "HB_TENSORFLOW_CACHE off, or no HOME";
    if (const auto folder = gradient_cache_folder()) try {
            cache.emplace(*folder, gradient_key(forward, requests_text(requests)));
        } catch (const hb::Error& e) {
            no_cache = e.what();
        }
    std::string unreadable;
    if (cache)
        if (const std::optional<GradientSection> section = cache->load()) {
            const auto start = std::chrono::steady_clock::now();
            try {
                import_gradients(*section);
                gradients_source =
                    "imported from " + cache->file().string() + " in " + seconds_since(start);
                return;
            } catch (const std::exception& e) {
                // TensorFlow leaves the graph as it was when an import fails.
                unreadable = " (" + cache->file().string() + " not imported: " + e.what() + ")";
                gradients.clear();
                input_gradient = TF_Output{};
            }
        }
    const auto start = std::chrono::steady_clock::now();
    add_gradients(requests);
    gradients_source = "built by TF_AddGradients in " + seconds_since(start) + unreadable;
    if (!cache) {
        gradients_source += " (no cache: " + no_cache + ")";
        return;
    }
    std::set<std::string, std::less<>> forward_nodes;
    for (const wire::GraphNode& n : wire::graph_nodes(forward)) forward_nodes.emplace(n.name);
    GradientSection section;
    section.graph_def = wire::graph_with_nodes(
        graph_def_of(tf_graph_.get()), [&](std::string_view n) { return !forward_nodes.count(n); });
    for (size_t t = 0; t < gradients.size(); ++t)
        if (gradients[t].oper)
            section.outputs.push_back(
                {int(t), TF_OperationName(gradients[t].oper), gradients[t].index});
    if (input_gradient.oper)
        section.outputs.push_back(
            {-1, TF_OperationName(input_gradient.oper), input_gradient.index});
    try {
        cache->store(section);
        gradients_source += ", stored in " + cache->file().string();
    } catch (const std::exception& e) {
        gradients_source += ", not stored: " + std::string(e.what());
    }
}

// The section's nodes into the graph, each input it reads from the forward graph mapped to the
// node of that name already here.
void TrainingStep::import_gradients(const GradientSection& section) {
    TF_Graph* g = tf_graph_.get();
    const std::vector<wire::GraphNode> nodes = wire::graph_nodes(section.graph_def);
    std::set<std::string_view> own;
    for (const wire::GraphNode& n : nodes) own.insert(n.name);
    ImportOptionsPtr options(TF_NewImportGraphDefOptions());
    std::set<std::string_view> mapped;
    auto forward_op = [&](const std::string& name) {
        TF_Operation* op = TF_GraphOperationByName(g, name.c_str());
        if (!op) throw hb::Error("the cached gradients read '" + name + "', which the graph lacks");
        return op;
    };
    for (const wire::GraphNode& n : nodes)
        for (std::string_view read : n.inputs) {
            const bool control = !read.empty() && read.front() == '^';
            const std::string_view source = control ? read.substr(1) : read;
            const size_t colon = source.rfind(':');
            const std::string node(source.substr(0, colon));
            if (own.count(node) || !mapped.insert(read).second) continue;
            if (control) {
                TF_ImportGraphDefOptionsRemapControlDependency(options.get(), node.c_str(),
                                                               forward_op(node));
            } else {
                const int index = colon == std::string_view::npos
                                      ? 0
                                      : std::stoi(std::string(source.substr(colon + 1)));
                TF_ImportGraphDefOptionsAddInputMapping(options.get(), node.c_str(), index,
                                                        TF_Output{forward_op(node), index});
            }
        }
    BufferPtr buffer(TF_NewBufferFromString(section.graph_def.data(), section.graph_def.size()));
    Status status;
    TF_GraphImportGraphDef(g, buffer.get(), options.get(), status.get());
    status.check("TF_GraphImportGraphDef (the cached gradients)");
    gradients.assign(ir_.tensors.size(), TF_Output{});
    for (const NamedOutput& o : section.outputs) {
        const TF_Output output{forward_op(o.node), o.index};
        if (o.tensor < 0)
            input_gradient = output;
        else
            gradients.at(size_t(o.tensor)) = output;
    }
}

// TensorFlow's autodiff (TF_AddGradients: its registered gradient of every op), asked layer by
// layer from the loss back, each layer's under "gradients/<layer>/autodiff/", so that profiles and
// errors name the layer; a value that several layers read gets the AddN of their gradients, as
// TensorFlow's own builder sums them. One call for the whole loss builds the same ops but names
// them "gradients/<op type>_<n>", which no profile could attribute to a layer.
void TrainingStep::add_gradients(const std::vector<GradientRequest>& requests) {
    TF_Graph* g = tf_graph_.get();
    std::vector<std::vector<TF_Output>> partial(values_.size());
    std::vector<std::vector<TF_Output>> tensor_partial(ir_.tensors.size());
    const TF_Output seed = constant("gradients/loss/ones", 1.f);
    for (const GradientRequest& r : requests) {
        const hb::Layer& layer = ir_.layers[size_t(r.layer)];
        const std::string prefix = "gradients/" + layer.name;
        TF_Output dy = seed;
        if (layer.kind != HB_LAYER_MSE_LOSS) {
            std::vector<TF_Output>& parts = partial[size_t(layer.output)];
            if (parts.empty()) continue;  // no path to the loss
            dy = sum(prefix + "/sum", parts, layer.name);
        }
        if (r.xs.empty()) continue;
        std::vector<TF_Output> xs = r.xs, dx(r.xs.size());
        TF_Output y = values_[size_t(layer.output)];
        Status status;
        TF_AddGradientsWithPrefix(g, (prefix + "/autodiff").c_str(), &y, 1, xs.data(),
                                  int(r.xs.size()), &dy, status.get(), dx.data());
        status.check("TF_AddGradients for layer '" + layer.name + "'");
        for (size_t k = 0; k < r.xs.size(); ++k) {
            if (!dx[k].oper) continue;
            if (k < r.x_values.size())
                partial[size_t(r.x_values[k])].push_back(dx[k]);
            else
                tensor_partial[size_t(r.x_tensors[k - r.x_values.size()])].push_back(dx[k]);
        }
    }
    gradients.assign(ir_.tensors.size(), TF_Output{});
    for (size_t t = 0; t < ir_.tensors.size(); ++t) {
        if (!ir_.tensors[t].trainable) continue;
        if (tensor_partial[t].empty())
            throw hb::Error("TF_AddGradients: no gradient for '" + ir_.tensors[t].name + "'");
        const std::string& layer = ir_.layers[size_t(ir_.tensors[t].layer)].name;
        gradients[t] =
            sum("gradients/" + layer + "/sum_" + std::to_string(t), tensor_partial[t], layer);
    }
    if (settings_.input_gradient) {
        if (partial[size_t(ir_.input)].empty())
            throw hb::Error("TF_AddGradients: no gradient for the input batch");
        input_gradient = sum("gradients/input/sum", partial[size_t(ir_.input)], "");
    }
}

}  // namespace hb_tensorflow
