// RMSProp, each variant as a TensorFlow user builds it: TensorFlow's with ResourceApplyRMSProp,
// Torch's in TensorFlow ops.
#include "training_step.hpp"

#include <string>

namespace hb_tensorflow {

// Each trainable tensor's RMSProp slots and update, after the gradients.
void TrainingStep::build_optimizer() {
    square_average.resize(ir_.tensors.size());
    momentum.resize(ir_.tensors.size());
    for (size_t i = 0; i < ir_.tensors.size(); ++i)
        if (ir_.tensors[i].trainable) build_update(int(i));
}

void TrainingStep::build_update(int tensor) {
    TF_Graph* g = tf_graph_.get();
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
        const TF_Output dims =
            constant_int(name + "/" + what + "/shape",
                         std::vector<int32_t>(slot.shape.begin(), slot.shape.end()),
                         {int64_t(slot.shape.size())});
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
        grad = binary("AddV2", name + "/decayed", grad,
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
    TF_Output step =
        binary("RealDiv", name + "/step", grad,
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
    step_targets.push_back(Op(g, "AssignSubVariableOp", name, layer)
                               .input(p.handle)
                               .input(binary("Mul", name + "/delta", step,
                                             constant(name + "/lr", o.learning_rate), layer))
                               .control(after)
                               .type("dtype", TF_FLOAT)
                               .finish());
}

}  // namespace hb_tensorflow
