// One checking macro for every CUDA runtime and cuDNN call: a failure throws hb::Error naming the
// call, the layer being set up or run, and the library's own message.
#pragma once

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <string>

namespace hb_cudnn {

// Names the layer (or setup stage) in the messages of failures while it is alive.
class ErrorContext {
public:
    explicit ErrorContext(const std::string& what);
    ~ErrorContext();
    ErrorContext(const ErrorContext&) = delete;
    ErrorContext& operator=(const ErrorContext&) = delete;

private:
    const std::string* previous_;
    std::string what_;
};

[[noreturn]] void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line);
[[noreturn]] void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file,
                                    int line);

inline void check(cudaError_t error, const char* call, const char* file, int line) {
    if (error != cudaSuccess) throw_cuda_error(error, call, file, line);
}
inline void check(cudnnStatus_t status, const char* call, const char* file, int line) {
    if (status != CUDNN_STATUS_SUCCESS) throw_cudnn_error(status, call, file, line);
}

}  // namespace hb_cudnn

#define HB_CHECK(call) ::hb_cudnn::check((call), #call, __FILE__, __LINE__)
