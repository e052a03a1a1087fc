// The graph's building blocks: variables, constants, and single ops named after their layer.
#include "training_step.hpp"

#include <string>

namespace hb_tensorflow {

Variable TrainingStep::variable(const std::string& name, const std::vector<int64_t>& shape,
                                const std::string& layer) {
    Variable v;
    v.shape = shape;
    TF_Graph* g = tf_graph_.get();
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

TF_Output TrainingStep::constant(const std::string& name, float value) {
    TensorPtr t = float_tensor({}, &value);
    return out(Op(tf_graph_.get(), "Const", name, "")
                   .tensor("value", t.get())
                   .type("dtype", TF_FLOAT)
                   .finish());
}

TF_Output TrainingStep::constant_int(const std::string& name, const std::vector<int32_t>& values,
                                     const std::vector<int64_t>& shape) {
    TensorPtr t = int32_tensor(shape, values);
    return out(Op(tf_graph_.get(), "Const", name, "")
                   .tensor("value", t.get())
                   .type("dtype", TF_INT32)
                   .finish());
}

TF_Output TrainingStep::binary(const char* type, const std::string& name, TF_Output a, TF_Output b,
                               const std::string& layer) {
    return out(
        Op(tf_graph_.get(), type, name, layer).input(a).input(b).type("T", TF_FLOAT).finish());
}

TF_Output TrainingStep::unary(const char* type, const std::string& name, TF_Output a,
                              const std::string& layer) {
    return out(Op(tf_graph_.get(), type, name, layer).input(a).type("T", TF_FLOAT).finish());
}

TF_Output TrainingStep::sum(const std::string& name, const std::vector<TF_Output>& terms,
                            const std::string& layer) {
    if (terms.size() == 1) return terms[0];
    return out(Op(tf_graph_.get(), "AddN", name, layer)
                   .inputs(terms)
                   .attr("N", int64_t(terms.size()))
                   .type("T", TF_FLOAT)
                   .finish());
}

}  // namespace hb_tensorflow
