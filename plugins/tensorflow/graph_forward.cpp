// The forward pass in NHWC, layer by layer with the loss among them, and the batch norms' running
// statistics.
#include "training_step.hpp"

#include <string>

namespace hb_tensorflow {

// Every layer in the graph's order, each mse_loss's term among them, then the total loss.
void TrainingStep::build_forward(TF_Output target) {
    TF_Graph* g = tf_graph_.get();
    const hb::Graph& graph = ir_;
    values_.assign(size_t(graph.num_values()), TF_Output{});
    inputs_.assign(size_t(graph.num_layers()), {});
    values_[size_t(graph.input)] = input;
    for (int i = 0; i < graph.num_layers(); ++i) {
        const hb::Layer& layer = graph.layers[size_t(i)];
        build_layer(layer, i, target);
    }
    if (losses_.empty()) throw hb::Error("graph: it has no mse_loss layer");
    loss = losses_.size() == 1 ? losses_[0]
                               : out(Op(g, "AddN", "loss/total", "")
                                         .inputs(losses_)
                                         .attr("N", int64_t(losses_.size()))
                                         .type("T", TF_FLOAT)
                                         .finish());
}

void TrainingStep::build_layer(const hb::Layer& layer, int index, TF_Output target) {
    TF_Graph* g = tf_graph_.get();
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
        case HB_LAYER_MSE_LOSS:
            y = mse_loss(layer, x, target);
            break;
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

TF_Output TrainingStep::mse_loss(const hb::Layer& layer, TF_Output y, TF_Output target) {
    TF_Graph* g = tf_graph_.get();
    const std::string& n = layer.name;
    TF_Output diff = binary("Sub", n + "/sub", y, target, n);
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
    losses_.push_back(m);
    return m;
}

TF_Output TrainingStep::conv2d(const hb::Layer& layer, TF_Output x) {
    TF_Graph* g = tf_graph_.get();
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

TF_Output TrainingStep::batchnorm(const hb::Layer& layer, TF_Output x) {
    TF_Graph* g = tf_graph_.get();
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
    TF_Output inv = unary("Rsqrt", n + "/batchnorm/rsqrt",
                          binary("AddV2", n + "/batchnorm/add", variance,
                                 constant(n + "/batchnorm/eps", layer.eps), n),
                          n);
    // tf.nn.batch_normalization leaves out the product with a missing scale and the sum with a
    // missing shift.
    if (layer.weight >= 0)
        inv = binary("Mul", n + "/batchnorm/mul", inv, state[size_t(layer.weight)].read, n);
    const TF_Output centred = binary("Mul", n + "/batchnorm/mul_2", mean, inv, n);
    const TF_Output shift = layer.bias >= 0 ? binary("Sub", n + "/batchnorm/sub",
                                                     state[size_t(layer.bias)].read, centred, n)
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

void TrainingStep::running_update(const hb::Layer& layer, int tensor, TF_Output batch_stat,
                                  float correction) {
    if (tensor < 0) return;
    const hb::Tensor& t = ir_.tensors[size_t(tensor)];
    const std::string name =
        layer.name + "/" + (t.role == HB_ROLE_RUNNING_MEAN ? "mean" : "var") + "_update";
    const std::string& n = layer.name;
    if (correction != 1)
        batch_stat = binary("Mul", name + "/unbiased", batch_stat,
                            constant(name + "/correction", correction), n);
    const TF_Output kept = binary("Mul", name + "/kept", state[size_t(tensor)].read,
                                  constant(name + "/decay", 1 - layer.momentum), n);
    const TF_Output added =
        binary("Mul", name + "/added", batch_stat, constant(name + "/momentum", layer.momentum), n);
    step_targets.push_back(Op(tf_graph_.get(), "AssignVariableOp", name, n)
                               .input(state[size_t(tensor)].handle)
                               .input(binary("AddV2", name + "/sum", kept, added, n))
                               .type("dtype", TF_FLOAT)
                               .finish());
}

}  // namespace hb_tensorflow
