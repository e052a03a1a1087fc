// TensorFlow's C API with RAII: every handle owned by a unique_ptr with its TF_Delete*, every
// TF_Status checked, and an operation builder that names each node after the IR layer it was
// built for, so that an error and a profiled node both say which layer they belong to.
#pragma once

#include "hb/error.hpp"

#include <tensorflow/c/c_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hb_tensorflow {

template <class T, void (*Delete)(T*)>
struct Deleter {
    void operator()(T* p) const {
        if (p) Delete(p);
    }
};

using StatusPtr = std::unique_ptr<TF_Status, Deleter<TF_Status, TF_DeleteStatus>>;
using GraphPtr = std::unique_ptr<TF_Graph, Deleter<TF_Graph, TF_DeleteGraph>>;
using TensorPtr = std::unique_ptr<TF_Tensor, Deleter<TF_Tensor, TF_DeleteTensor>>;
using BufferPtr = std::unique_ptr<TF_Buffer, Deleter<TF_Buffer, TF_DeleteBuffer>>;
using ImportOptionsPtr = std::unique_ptr<TF_ImportGraphDefOptions,
                                         Deleter<TF_ImportGraphDefOptions,
                                                 TF_DeleteImportGraphDefOptions>>;
using OptionsPtr =
    std::unique_ptr<TF_SessionOptions, Deleter<TF_SessionOptions, TF_DeleteSessionOptions>>;

// A TF_Status that throws hb::Error with `what` and TensorFlow's message when it is not OK.
class Status {
public:
    Status() : status_(TF_NewStatus()) {}
    TF_Status* get() { return status_.get(); }
    void check(const std::string& what);

private:
    StatusPtr status_;
};

// A session closed and deleted at destruction.
class SessionHandle {
public:
    SessionHandle(TF_Graph* graph, const TF_SessionOptions* options);
    ~SessionHandle();
    SessionHandle(const SessionHandle&) = delete;
    SessionHandle& operator=(const SessionHandle&) = delete;
    TF_Session* get() const { return session_; }

private:
    TF_Session* session_ = nullptr;
};

// The graph as a serialised GraphDef.
std::string graph_def_of(TF_Graph* graph);

// A float32 tensor of `shape` holding a copy of `data`, or uninitialised when `data` is null
// (TF_AllocateTensor's aligned buffer).
TensorPtr float_tensor(const std::vector<int64_t>& shape, const float* data);
TensorPtr int32_tensor(const std::vector<int64_t>& shape, const std::vector<int32_t>& data);

// Builds one node: TF_NewOperation, its inputs and attributes, TF_FinishOperation. `layer` names
// the IR layer in the message when TensorFlow refuses the node.
class Op {
public:
    Op(TF_Graph* graph, const char* type, const std::string& name, const std::string& layer);
    Op& input(TF_Output x);
    Op& inputs(const std::vector<TF_Output>& xs);
    Op& control(TF_Operation* op);
    Op& attr(const char* key, int64_t value);
    Op& attr(const char* key, float value);
    Op& attr(const char* key, bool value);
    Op& attr(const char* key, const char* value);
    Op& attr(const char* key, const std::vector<int64_t>& values);
    Op& type(const char* key, TF_DataType value);
    Op& shape(const char* key, const std::vector<int64_t>& dims);
    Op& tensor(const char* key, TF_Tensor* value);
    TF_Operation* finish();

private:
    TF_OperationDescription* desc_;
    std::string what_;
};

}  // namespace hb_tensorflow
