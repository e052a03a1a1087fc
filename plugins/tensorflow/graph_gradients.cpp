#include "training_step.hpp"

#include <string>

namespace hb_tensorflow {

// TensorFlow's autodiff (TF_AddGradients: its registered gradient of every op), asked layer by
// layer from the loss back, each layer's under "gradients/<layer>/autodiff/", so that profiles and
// errors name the layer; a value that several layers read gets the AddN of their gradients, as
// TensorFlow's own builder sums them. One call for the whole loss builds the same ops but names
// them "gradients/<op type>_<n>", which no profile could attribute to a layer.
void TrainingStep::build_gradients() {
    TF_Graph* g = tf_graph_.get();
    std::vector<std::vector<TF_Output>> partial(values_.size());
    std::vector<std::vector<TF_Output>> tensor_partial(ir_.tensors.size());
    const TF_Output seed = constant("gradients/loss/ones", 1.f);
    for (int i = ir_.num_layers() - 1; i >= 0; --i) {
        const hb::Layer& layer = ir_.layers[size_t(i)];
        const std::string prefix = "gradients/" + layer.name;
        TF_Output dy = seed;
        if (layer.kind != HB_LAYER_MSE_LOSS) {
            std::vector<TF_Output>& parts = partial[size_t(layer.output)];
            if (parts.empty()) continue;  // no path to the loss
            dy = sum(prefix + "/sum", parts, layer.name);
        }
        std::vector<TF_Output> xs;
        std::vector<int> x_values, x_tensors;
        for (size_t k = 0; k < layer.inputs.size(); ++k) {
            const int v = layer.inputs[k];
            if (v == ir_.input && !settings_.input_gradient) continue;
            const std::vector<TF_Output>& own = inputs_[size_t(i)];
            xs.push_back(own.empty() ? values_[size_t(v)] : own[k]);
            x_values.push_back(v);
        }
        for (int t : {layer.weight, layer.bias})
            if (t >= 0 && ir_.tensors[size_t(t)].trainable) {
                xs.push_back(state[size_t(t)].read);
                x_tensors.push_back(t);
            }
        if (xs.empty()) continue;
        std::vector<TF_Output> dx(xs.size());
        TF_Output y = values_[size_t(layer.output)];
        Status status;
        TF_AddGradientsWithPrefix(g, (prefix + "/autodiff").c_str(), &y, 1, xs.data(),
                                  int(xs.size()), &dy, status.get(), dx.data());
        status.check("TF_AddGradients for layer '" + layer.name + "'");
        for (size_t k = 0; k < xs.size(); ++k) {
            if (!dx[k].oper) continue;
            if (k < x_values.size())
                partial[size_t(x_values[k])].push_back(dx[k]);
            else
                tensor_partial[size_t(x_tensors[k - x_values.size()])].push_back(dx[k]);
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
