#include "tf.hpp"

#include <cstring>

namespace hb_tensorflow {

void Status::check(const std::string& what) {
    if (TF_GetCode(status_.get()) != TF_OK)
        throw hb::Error(what + ": " + TF_Message(status_.get()));
}

SessionHandle::SessionHandle(TF_Graph* graph, const TF_SessionOptions* options) {
    Status status;
    session_ = TF_NewSession(graph, options, status.get());
    status.check("TF_NewSession");
}

SessionHandle::~SessionHandle() {
    Status status;
    TF_CloseSession(session_, status.get());
    TF_DeleteSession(session_, status.get());
}

std::string graph_def_of(TF_Graph* graph) {
    BufferPtr buffer(TF_NewBuffer());
    Status status;
    TF_GraphToGraphDef(graph, buffer.get(), status.get());
    status.check("TF_GraphToGraphDef");
    return std::string(static_cast<const char*>(buffer->data), buffer->length);
}

namespace {

TensorPtr allocate(TF_DataType type, const std::vector<int64_t>& shape, size_t bytes) {
    TensorPtr t(TF_AllocateTensor(type, shape.data(), static_cast<int>(shape.size()), bytes));
    if (!t) throw hb::Error("TF_AllocateTensor: out of memory", HB_OUT_OF_MEMORY);
    return t;
}

size_t count(const std::vector<int64_t>& shape) {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    return n;
}

}  // namespace

TensorPtr float_tensor(const std::vector<int64_t>& shape, const float* data) {
    const size_t bytes = count(shape) * sizeof(float);
    TensorPtr t = allocate(TF_FLOAT, shape, bytes);
    if (bytes && data) std::memcpy(TF_TensorData(t.get()), data, bytes);
    return t;
}

TensorPtr int32_tensor(const std::vector<int64_t>& shape, const std::vector<int32_t>& data) {
    TensorPtr t = allocate(TF_INT32, shape, data.size() * sizeof(int32_t));
    if (!data.empty()) std::memcpy(TF_TensorData(t.get()), data.data(), data.size() * sizeof(int32_t));
    return t;
}

Op::Op(TF_Graph* graph, const char* type, const std::string& name, const std::string& layer)
    : desc_(TF_NewOperation(graph, type, name.c_str())),
      what_(std::string(type) + " '" + name + "'" +
            (layer.empty() ? std::string() : " for layer '" + layer + "'")) {}

Op& Op::input(TF_Output x) {
    TF_AddInput(desc_, x);
    return *this;
}
Op& Op::inputs(const std::vector<TF_Output>& xs) {
    TF_AddInputList(desc_, xs.data(), static_cast<int>(xs.size()));
    return *this;
}
Op& Op::control(TF_Operation* op) {
    TF_AddControlInput(desc_, op);
    return *this;
}
Op& Op::attr(const char* key, int64_t value) {
    TF_SetAttrInt(desc_, key, value);
    return *this;
}
Op& Op::attr(const char* key, float value) {
    TF_SetAttrFloat(desc_, key, value);
    return *this;
}
Op& Op::attr(const char* key, bool value) {
    TF_SetAttrBool(desc_, key, value ? 1 : 0);
    return *this;
}
Op& Op::attr(const char* key, const char* value) {
    TF_SetAttrString(desc_, key, value, std::strlen(value));
    return *this;
}
Op& Op::attr(const char* key, const std::vector<int64_t>& values) {
    TF_SetAttrIntList(desc_, key, values.data(), static_cast<int>(values.size()));
    return *this;
}
Op& Op::type(const char* key, TF_DataType value) {
    TF_SetAttrType(desc_, key, value);
    return *this;
}
Op& Op::shape(const char* key, const std::vector<int64_t>& dims) {
    TF_SetAttrShape(desc_, key, dims.data(), static_cast<int>(dims.size()));
    return *this;
}
Op& Op::tensor(const char* key, TF_Tensor* value) {
    Status status;
    TF_SetAttrTensor(desc_, key, value, status.get());
    status.check(what_ + ": attribute " + key);
    return *this;
}

TF_Operation* Op::finish() {
    Status status;
    TF_Operation* op = TF_FinishOperation(desc_, status.get());
    status.check(what_);
    return op;
}

}  // namespace hb_tensorflow
