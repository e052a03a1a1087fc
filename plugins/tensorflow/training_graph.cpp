#include "training_graph.hpp"

#include <string>

namespace tensorflow_plugin {
namespace {

TF_Output out(TF_Operation* op, int index = 0) {
    return TF_Output{op, index};
}

std::vector<int64_t> nhwc(const hb::Dims& d) {
    return {d.n, d.h, d.w, d.c};
}

}  // namespace

Variable TrainingGraph::variable(const std::string& name, const std::vector<int64_t>& shape,
                                 const std::string& layer) {
    Variable v;
    v.shape = shape;
    TF_Graph* g = graph_.get();
    v.handle = out(Op(g, "VarHandleOp", name, layer)
                       .type("dtype", TF_FLOAT)
                       .shape("shape", shape)
                       .attr("shared_name", name.c_str())
                       .finish());
    v.read = out(Op(g, "ReadVariableOp", name + "/read", layer)
                     .input(v.handle)
                     .type("dtype", TF_FLOAT)
                     .finish());
    v.value = out(Op(g, "Placeholder", "init/" + name, layer)
                      .type("dtype", TF_FLOAT)
                      .shape("shape", shape)
                      .finish());
    v.assign = Op(g, "AssignVariableOp", "init/" + name + "/assign", layer)
                   .input(v.handle)
                   .input(v.value)
                   .type("dtype", TF_FLOAT)
                   .finish();
    return v;
}

TF_Output TrainingGraph::constant(const std::string& name, float value) {
    TensorPtr t = float_tensor({}, &value);
    return out(Op(graph_.get(), "Const", name, "")
                   .tensor("value", t.get())
                   .type("dtype", TF_FLOAT)
                   .finish());
}

TF_Output TrainingGraph::constant_int(const std::string& name, const std::vector<int32_t>& values,
                                      const std::vector<int64_t>& shape) {
    TensorPtr t = int32_tensor(shape, values);
    return out(Op(graph_.get(), "Const", name, "")
                   .tensor("value", t.get())
                   .type("dtype", TF_INT32)
                   .finish());
}

TF_Output TrainingGraph::binary(const char* type, const std::string& name, TF_Output a,
                                TF_Output b, const std::string& layer) {
    return out(
        Op(graph_.get(), type, name, layer).input(a).input(b).type("T", TF_FLOAT).finish());
}

TF_Output TrainingGraph::unary(const char* type, const std::string& name, TF_Output a,
                               const std::string& layer) {
    return out(Op(graph_.get(), type, name, layer).input(a).type("T", TF_FLOAT).finish());
}

TrainingGraph::TrainingGraph(const hb::Graph& graph, const Settings& settings)
    : ir_(graph), settings_(settings), graph_(TF_NewGraph()) {
    TF_Graph* g = graph_.get();
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
    values_.assign(size_t(graph.num_values()), TF_Output{});
    inputs_.assign(size_t(graph.num_layers()), {});
    values_[size_t(graph.input)] = input;
    for (int i = 0; i < graph.num_layers(); ++i) {
        const hb::Layer& layer = graph.layers[size_t(i)];
        if (layer.kind == HB_LAYER_MSE_LOSS) {
            const std::string& n = layer.name;
            TF_Output diff = binary("Sub", n + "/sub", values_[size_t(layer.inputs[0])], target, n);
            TF_Output sq = unary("Square", n + "/square", diff, n);
            TF_Output m = out(Op(g, "Mean", n + "/mean", n)
                                  .input(sq)
                                  .input(constant_int(n + "/axes", {0, 1, 2, 3}, {4}))
                                  .type("T", TF_FLOAT)
                                  .type("Tidx", TF_INT32)
                                  .finish());
            if (layer.loss_weight != 1)
                m = binary("Mul", n + "/weighted", m,
                           constant(n + "/weight", static_cast<float>(layer.loss_weight)), n);
            values_[size_t(layer.output)] = m;
            losses_.push_back(m);
        } else {
            build_layer(layer, i);
        }
    }
    if (losses_.empty()) throw hb::Error("graph: it has no mse_loss layer");
    loss = losses_.size() == 1 ? losses_[0]
                               : out(Op(g, "AddN", "loss/total", "")
                                         .inputs(losses_)
                                         .attr("N", int64_t(losses_.size()))
                                         .type("T", TF_FLOAT)
                                         .finish());

    build_gradients();
    square_average.resize(graph.tensors.size());
    momentum.resize(graph.tensors.size());
    for (size_t i = 0; i < graph.tensors.size(); ++i)
        if (graph.tensors[i].trainable) build_update(int(i));
}

// TensorFlow's autodiff (TF_AddGradients: its registered gradient of every op), asked layer by
// layer from the loss back, each layer's under "gradients/<layer>/autodiff/", so that profiles and
// errors name the layer; a value that several layers read gets the AddN of their gradients, as
// TensorFlow's own builder sums them. One call for the whole loss builds the same ops but names
// them "gradients/<op type>_<n>", which no profile could attribute to a layer.
void TrainingGraph::build_gradients() {
    TF_Graph* g = graph_.get();
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
        TF_AddGradientsWithPrefix(g, (prefix + "/autodiff").c_str(), &y, 1, xs.data(), int(xs.size()), &dy,
                                  status.get(), dx.data());
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
        gradients[t] = sum("gradients/" + layer + "/sum_" + std::to_string(t), tensor_partial[t],
                           layer);
    }
    if (settings_.input_gradient) {
        if (partial[size_t(ir_.input)].empty())
            throw hb::Error("TF_AddGradients: no gradient for the input batch");
        input_gradient = sum("gradients/input/sum", partial[size_t(ir_.input)], "");
    }
}

TF_Output TrainingGraph::sum(const std::string& name, const std::vector<TF_Output>& terms,
                             const std::string& layer) {
    if (terms.size() == 1) return terms[0];
    return out(Op(graph_.get(), "AddN", name, layer)
                   .inputs(terms)
                   .attr("N", int64_t(terms.size()))
                   .type("T", TF_FLOAT)
                   .finish());
}

void TrainingGraph::build_layer(const hb::Layer& layer, int index) {
    TF_Graph* g = graph_.get();
    const std::string& n = layer.name;
    const TF_Output x = values_[size_t(layer.inputs[0])];
    TF_Output y{};
    switch (layer.kind) {
        case HB_LAYER_CONV2D:
            y = conv2d(layer, x);
            break;
        case HB_LAYER_BATCHNORM:
            y = batchnorm(layer, x);
            break;
        case HB_LAYER_RELU:
            y = unary("Relu", n + "/relu", x, n);
            break;
        case HB_LAYER_MAXPOOL2D:
            y = out(Op(g, "MaxPool", n + "/maxpool", n)
                        .input(x)
                        .type("T", TF_FLOAT)
                        .attr("ksize", std::vector<int64_t>{1, 2, 2, 1})
                        .attr("strides", std::vector<int64_t>{1, 2, 2, 1})
                        .attr("padding", "VALID")
                        .attr("data_format", "NHWC")
                        .finish());
            break;
        case HB_LAYER_UPSAMPLE: {
            const hb::Dims& d = ir_.values[size_t(layer.output)];
            y = out(Op(g, "ResizeNearestNeighbor", n + "/resize", n)
                        .input(x)
                        .input(constant_int(n + "/size", {int32_t(d.h), int32_t(d.w)}, {2}))
                        .type("T", TF_FLOAT)
                        .attr("align_corners", false)
                        .attr("half_pixel_centers", false)
                        .finish());
            break;
        }
        case HB_LAYER_ADD: {
            // Each term through an Identity of this layer's own: the residual's main branch leads
            // from one term to the other, and the sum's gradient with respect to the terms
            // themselves would run through that branch too.
            std::vector<TF_Output> terms;
            for (size_t k = 0; k < layer.inputs.size(); ++k)
                terms.push_back(unary("Identity", n + "/term_" + std::to_string(k),
                                      values_[size_t(layer.inputs[k])], n));
            inputs_[size_t(index)] = terms;
            y = out(Op(g, "AddN", n + "/add", n)
                        .inputs(terms)
                        .attr("N", int64_t(terms.size()))
                        .type("T", TF_FLOAT)
                        .finish());
            break;
        }
        default:
            throw hb::Error("layer '" + n + "': kind " + hb::layer_kind_name(layer.kind) +
                                " is not supported by the tensorflow backend",
                            HB_UNSUPPORTED);
    }
    values_[size_t(layer.output)] = y;
}

TF_Output TrainingGraph::conv2d(const hb::Layer& layer, TF_Output x) {
    TF_Graph* g = graph_.get();
    const std::string& n = layer.name;
    // A TensorFlow user writes SAME where it pads as the layer does (stride 1, k = 2p + 1), VALID
    // for no padding, and tf.pad + VALID otherwise: SAME at stride 2 pads the bottom and right
    // more than the top and left, and Conv2D's gradient ignores explicit paddings.
    const char* padding = "VALID";
    if (layer.padding > 0 && layer.stride == 1 && layer.kernel == 2 * layer.padding + 1) {
        padding = "SAME";
    } else if (layer.padding > 0) {
        const auto p = int32_t(layer.padding);
        x = out(Op(g, "Pad", n + "/pad", n)
                    .input(x)
                    .input(constant_int(n + "/paddings", {0, 0, p, p, p, p, 0, 0}, {4, 2}))
                    .type("T", TF_FLOAT)
                    .type("Tpaddings", TF_INT32)
                    .finish());
    }
    TF_Output y = out(Op(g, "Conv2D", n + "/conv", n)
                          .input(x)
                          .input(state[size_t(layer.weight)].read)
                          .type("T", TF_FLOAT)
                          .attr("strides", std::vector<int64_t>{1, layer.stride, layer.stride, 1})
                          .attr("padding", padding)
                          .attr("data_format", "NHWC")
                          .finish());
    if (layer.bias >= 0)
        y = out(Op(g, "BiasAdd", n + "/bias", n)
                    .input(y)
                    .input(state[size_t(layer.bias)].read)
                    .type("T", TF_FLOAT)
                    .attr("data_format", "NHWC")
                    .finish());
    return y;
}

TF_Output TrainingGraph::batchnorm(const hb::Layer& layer, TF_Output x) {
    TF_Graph* g = graph_.get();
    const std::string& n = layer.name;
    const hb::Dims& d = ir_.values[size_t(layer.inputs[0])];
    const float count = float(d.n * d.h * d.w);
    if (settings_.fused_batchnorm) {
        // Without a scale or a shift, what tf.contrib.layers.batch_norm gave the fused op:
        // constant ones or zeros.
        auto parameter = [&](int tensor, float fill, const char* name) {
            if (tensor >= 0) return state[size_t(tensor)].read;
            const std::vector<float> values(size_t(d.c), fill);
            TensorPtr t = float_tensor({d.c}, values.data());
            return out(Op(g, "Const", n + name, n)
                           .tensor("value", t.get())
                           .type("dtype", TF_FLOAT)
                           .finish());
        };
        const TF_Output gamma = parameter(layer.weight, 1, "/ones");
        const TF_Output beta = parameter(layer.bias, 0, "/zeros");
        TensorPtr empty = float_tensor({0}, nullptr);
        const TF_Output none = out(Op(g, "Const", n + "/no_statistics", n)
                                       .tensor("value", empty.get())
                                       .type("dtype", TF_FLOAT)
                                       .finish());
        TF_Operation* bn = Op(g, "FusedBatchNormV3", n + "/batchnorm", n)
                               .input(x)
                               .input(gamma)
                               .input(beta)
                               .input(none)
                               .input(none)
                               .type("T", TF_FLOAT)
                               .type("U", TF_FLOAT)
                               .attr("epsilon", layer.eps)
                               .attr("data_format", "NHWC")
                               .attr("is_training", true)
                               .finish();
        // Outputs 1 and 2: the batch's mean and its variance, already the unbiased one.
        running_update(layer, layer.running_mean, out(bn, 1), 1);
        running_update(layer, layer.running_var, out(bn, 2), 1);
        return out(bn, 0);
    }
    // tf.nn.moments, then tf.nn.batch_normalization, as tf.contrib.layers.batch_norm built them.
    const TF_Output axes = constant_int(n + "/moments/axes", {0, 1, 2}, {3});
    auto mean_over = [&](const std::string& name, TF_Output v) {
        return out(Op(g, "Mean", name, n)
                       .input(v)
                       .input(axes)
                       .type("T", TF_FLOAT)
                       .type("Tidx", TF_INT32)
                       .attr("keep_dims", true)
                       .finish());
    };
    const TF_Output mean = mean_over(n + "/moments/mean", x);
    const TF_Output fixed = unary("StopGradient", n + "/moments/StopGradient", mean, n);
    const TF_Output variance = mean_over(
        n + "/moments/variance", binary("SquaredDifference", n + "/moments/sqdiff", x, fixed, n));
    TF_Output inv = unary(
        "Rsqrt", n + "/batchnorm/rsqrt",
        binary("AddV2", n + "/batchnorm/add", variance, constant(n + "/batchnorm/eps", layer.eps),
               n),
        n);
    // tf.nn.batch_normalization leaves out the product with a missing scale and the sum with a
    // missing shift.
    if (layer.weight >= 0)
        inv = binary("Mul", n + "/batchnorm/mul", inv, state[size_t(layer.weight)].read, n);
    const TF_Output centred = binary("Mul", n + "/batchnorm/mul_2", mean, inv, n);
    const TF_Output shift =
        layer.bias >= 0
            ? binary("Sub", n + "/batchnorm/sub", state[size_t(layer.bias)].read, centred, n)
            : unary("Neg", n + "/batchnorm/neg", centred, n);
    const TF_Output y = binary("AddV2", n + "/batchnorm/add_1",
                               binary("Mul", n + "/batchnorm/mul_1", x, inv, n), shift, n);
    const TF_Output channels = constant_int(n + "/moments/channels", {int32_t(d.c)}, {1});
    auto squeeze = [&](const std::string& name, TF_Output v) {
        return out(Op(g, "Reshape", name, n)
                       .input(v)
                       .input(channels)
                       .type("T", TF_FLOAT)
                       .type("Tshape", TF_INT32)
                       .finish());
    };
    running_update(layer, layer.running_mean, squeeze(n + "/moments/Squeeze", mean), 1);
    // The IR's running variance is the unbiased one (docs/design.md §4).
    running_update(layer, layer.running_var, squeeze(n + "/moments/Squeeze_1", variance),
                   count > 1 ? count / (count - 1) : 1);
    return y;
}

void TrainingGraph::running_update(const hb::Layer& layer, int tensor, TF_Output batch_stat,
                                   float correction) {
    if (tensor < 0) return;
    const hb::Tensor& t = ir_.tensors[size_t(tensor)];
    const std::string name = layer.name + "/" + (t.role == HB_ROLE_RUNNING_MEAN ? "mean" : "var") +
                             "_update";
    const std::string& n = layer.name;
    if (correction != 1)
        batch_stat = binary("Mul", name + "/unbiased", batch_stat,
                            constant(name + "/correction", correction), n);
    const TF_Output kept = binary("Mul", name + "/kept", state[size_t(tensor)].read,
                                  constant(name + "/decay", 1 - layer.momentum), n);
    const TF_Output added =
        binary("Mul", name + "/added", batch_stat, constant(name + "/momentum", layer.momentum), n);
    step_targets.push_back(Op(graph_.get(), "AssignVariableOp", name, n)
                               .input(state[size_t(tensor)].handle)
                               .input(binary("AddV2", name + "/sum", kept, added, n))
                               .type("dtype", TF_FLOAT)
                               .finish());
}

void TrainingGraph::build_update(int tensor) {
    TF_Graph* g = graph_.get();
    const hb::Tensor& t = ir_.tensors[size_t(tensor)];
    const hb_optimizer& o = settings_.optimizer;
    const std::string& layer = ir_.layers[size_t(t.layer)].name;
    const std::string name = "update/" + t.name;
    const Variable& p = state[size_t(tensor)];
    Variable& v = square_average[size_t(tensor)];
    v = variable(name + "/rmsprop", p.shape, layer);
    const bool keeps_momentum = o.variant == HB_RMSPROP_TENSORFLOW || o.momentum > 0;
    if (keeps_momentum) momentum[size_t(tensor)] = variable(name + "/momentum", p.shape, layer);

    // The slots' initial values: v0 (initial_square_average) and a zero momentum buffer.
    auto fill = [&](const Variable& slot, float value, const std::string& what) {
        const TF_Output dims = constant_int(
            name + "/" + what + "/shape",
            std::vector<int32_t>(slot.shape.begin(), slot.shape.end()), {int64_t(slot.shape.size())});
        const TF_Output filled = out(Op(g, "Fill", name + "/" + what + "/fill", layer)
                                         .input(dims)
                                         .input(constant(name + "/" + what + "/value", value))
                                         .type("T", TF_FLOAT)
                                         .type("index_type", TF_INT32)
                                         .finish());
        reset_optimizer.push_back(Op(g, "AssignVariableOp", name + "/" + what + "/reset", layer)
                                      .input(slot.handle)
                                      .input(filled)
                                      .type("dtype", TF_FLOAT)
                                      .finish());
    };
    fill(v, o.initial_square_average, "rmsprop");
    if (keeps_momentum) fill(momentum[size_t(tensor)], 0, "momentum");

    // Weight decay is added to the gradient (g + wd p), as TensorFlow users add an L2 term's.
    TF_Output grad = gradients[size_t(tensor)];
    if (o.weight_decay > 0)
        grad = binary("AddV2", name + "/decayed",
                      grad,
                      binary("Mul", name + "/decay", p.read,
                             constant(name + "/weight_decay", o.weight_decay), layer),
                      layer);
    // After the forward pass has read every parameter: an update never races a read of this step.
    TF_Operation* after = loss.oper;
    if (o.variant == HB_RMSPROP_TENSORFLOW) {
        step_targets.push_back(Op(g, "ResourceApplyRMSProp", name, layer)
                                   .input(p.handle)
                                   .input(v.handle)
                                   .input(momentum[size_t(tensor)].handle)
                                   .input(constant(name + "/lr", o.learning_rate))
                                   .input(constant(name + "/rho", o.alpha))
                                   .input(constant(name + "/momentum_factor", o.momentum))
                                   .input(constant(name + "/epsilon", o.eps))
                                   .input(grad)
                                   .control(after)
                                   .type("T", TF_FLOAT)
                                   .finish());
        return;
    }
    // Torch's variant, in TensorFlow ops: v = a v + (1 - a) g^2; s = g / (sqrt(v) + eps);
    // b = m b + s; p -= lr b (without momentum, p -= lr s).
    const TF_Output new_v =
        binary("AddV2", name + "/v",
               binary("Mul", name + "/v_kept", v.read, constant(name + "/alpha", o.alpha), layer),
               binary("Mul", name + "/v_added", unary("Square", name + "/g2", grad, layer),
                      constant(name + "/one_minus_alpha", 1 - o.alpha), layer),
               layer);
    step_targets.push_back(Op(g, "AssignVariableOp", name + "/assign_v", layer)
                               .input(v.handle)
                               .input(new_v)
                               .type("dtype", TF_FLOAT)
                               .finish());
    TF_Output step = binary(
        "RealDiv", name + "/step", grad,
        binary("AddV2", name + "/denominator", unary("Sqrt", name + "/sqrt_v", new_v, layer),
               constant(name + "/eps", o.eps), layer),
        layer);
    if (keeps_momentum) {
        const Variable& b = momentum[size_t(tensor)];
        step = binary("AddV2", name + "/b",
                      binary("Mul", name + "/b_kept", b.read,
                             constant(name + "/momentum_factor", o.momentum), layer),
                      step, layer);
        step_targets.push_back(Op(g, "AssignVariableOp", name + "/assign_b", layer)
                                   .input(b.handle)
                                   .input(step)
                                   .type("dtype", TF_FLOAT)
                                   .finish());
    }
    step_targets.push_back(
        Op(g, "AssignSubVariableOp", name, layer)
            .input(p.handle)
            .input(binary("Mul", name + "/delta", step, constant(name + "/lr", o.learning_rate),
                          layer))
            .control(after)
            .type("dtype", TF_FLOAT)
            .finish());
}

int TrainingGraph::layer_of(const std::string& node_name) const {
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

}  // namespace tensorflow_plugin
