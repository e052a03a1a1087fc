#include "check.hpp"

#include "hb/plugin.hpp"

#include <cstring>

namespace hb_cudnn {
namespace {

thread_local const std::string* current_context = nullptr;

std::string where(const char* call, const char* file, int line) {
    const char* base = std::strrchr(file, '/');
    std::string s =
        std::string(call) + " (" + (base ? base + 1 : file) + ":" + std::to_string(line) + ")";
    if (current_context) s += " in " + *current_context;
    return s;
}

}  // namespace

ErrorContext::ErrorContext(const std::string& what) : previous_(current_context), what_(what) {
    current_context = &what_;
}

ErrorContext::~ErrorContext() {
    current_context = previous_;
}

void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line) {
    const hb_status status = error == cudaErrorMemoryAllocation ? HB_OUT_OF_MEMORY : HB_ERROR;
    throw hb::Error(where(call, file, line) + " failed: " + cudaGetErrorName(error) + ": " +
                        cudaGetErrorString(error),
                    status);
}

void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line) {
    char detail[1024] = {0};
    cudnnGetLastErrorString(detail, sizeof(detail));
    std::string message = where(call, file, line) + " failed: " + cudnnGetErrorString(status);
    if (detail[0]) message += ": " + std::string(detail);
    hb_status code = HB_ERROR;
    if (status == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
        status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
        code = HB_OUT_OF_MEMORY;
    // cuDNN 9 numbers its statuses by category: 3xxx are the "not supported" family.
    if (static_cast<int>(status) / 1000 == static_cast<int>(CUDNN_STATUS_NOT_SUPPORTED) / 1000)
        code = HB_UNSUPPORTED;
    throw hb::Error(message, code);
}

}  // namespace hb_cudnn
