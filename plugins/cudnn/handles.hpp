// Owning handles for CUDA and cuDNN objects: each is a unique_ptr whose deleter releases it, so
// nothing leaks when setup throws halfway.
#pragma once

#include "check.hpp"

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>
#include <memory>
#include <type_traits>

namespace hb_cudnn {

template <class Handle, cudaError_t (*Destroy)(Handle)>
struct CudaDeleter {
    void operator()(Handle h) const noexcept { Destroy(h); }
};
template <class Handle, cudnnStatus_t (*Destroy)(Handle)>
struct CudnnDeleter {
    void operator()(Handle h) const noexcept { Destroy(h); }
};

// The handle types are pointers to opaque structs, which unique_ptr manages directly.
using Stream = std::unique_ptr<std::remove_pointer_t<cudaStream_t>,
                               CudaDeleter<cudaStream_t, cudaStreamDestroy>>;
using Event =
    std::unique_ptr<std::remove_pointer_t<cudaEvent_t>, CudaDeleter<cudaEvent_t, cudaEventDestroy>>;
using Graph =
    std::unique_ptr<std::remove_pointer_t<cudaGraph_t>, CudaDeleter<cudaGraph_t, cudaGraphDestroy>>;
using GraphExec = std::unique_ptr<std::remove_pointer_t<cudaGraphExec_t>,
                                  CudaDeleter<cudaGraphExec_t, cudaGraphExecDestroy>>;

using CudnnHandle = std::unique_ptr<std::remove_pointer_t<cudnnHandle_t>,
                                    CudnnDeleter<cudnnHandle_t, cudnnDestroy>>;
using TensorDescriptor =
    std::unique_ptr<std::remove_pointer_t<cudnnTensorDescriptor_t>,
                    CudnnDeleter<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>>;
using FilterDescriptor =
    std::unique_ptr<std::remove_pointer_t<cudnnFilterDescriptor_t>,
                    CudnnDeleter<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor>>;
using ConvolutionDescriptor =
    std::unique_ptr<std::remove_pointer_t<cudnnConvolutionDescriptor_t>,
                    CudnnDeleter<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor>>;
using ActivationDescriptor =
    std::unique_ptr<std::remove_pointer_t<cudnnActivationDescriptor_t>,
                    CudnnDeleter<cudnnActivationDescriptor_t, cudnnDestroyActivationDescriptor>>;

inline Stream make_stream() {
    cudaStream_t s = nullptr;
    HB_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return Stream(s);
}
inline Event make_event() {
    cudaEvent_t e = nullptr;
    HB_CHECK(cudaEventCreate(&e));
    return Event(e);
}
inline CudnnHandle make_cudnn() {
    cudnnHandle_t h = nullptr;
    HB_CHECK(cudnnCreate(&h));
    return CudnnHandle(h);
}
inline TensorDescriptor make_tensor_descriptor() {
    cudnnTensorDescriptor_t d = nullptr;
    HB_CHECK(cudnnCreateTensorDescriptor(&d));
    return TensorDescriptor(d);
}
inline FilterDescriptor make_filter_descriptor() {
    cudnnFilterDescriptor_t d = nullptr;
    HB_CHECK(cudnnCreateFilterDescriptor(&d));
    return FilterDescriptor(d);
}
inline ConvolutionDescriptor make_convolution_descriptor() {
    cudnnConvolutionDescriptor_t d = nullptr;
    HB_CHECK(cudnnCreateConvolutionDescriptor(&d));
    return ConvolutionDescriptor(d);
}
inline ActivationDescriptor make_activation_descriptor() {
    cudnnActivationDescriptor_t d = nullptr;
    HB_CHECK(cudnnCreateActivationDescriptor(&d));
    return ActivationDescriptor(d);
}

// Device memory from cudaMalloc; HB_OUT_OF_MEMORY when the device has too little.
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
        if (bytes == 0) return;
        void* p = nullptr;
        HB_CHECK(cudaMalloc(&p, bytes));
        data_.reset(p);
    }
    void* get() const { return data_.get(); }
    float* floats() const { return static_cast<float*>(data_.get()); }
    size_t bytes() const { return bytes_; }

private:
    struct Free {
        void operator()(void* p) const noexcept { cudaFree(p); }
    };
    std::unique_ptr<void, Free> data_;
    size_t bytes_ = 0;
};

// Page-locked host memory, for reading values back without a staging copy.
class PinnedBuffer {
public:
    PinnedBuffer() = default;
    explicit PinnedBuffer(size_t bytes) {
        if (bytes == 0) return;
        void* p = nullptr;
        HB_CHECK(cudaMallocHost(&p, bytes));
        data_.reset(p);
    }
    void* get() const { return data_.get(); }

private:
    struct Free {
        void operator()(void* p) const noexcept { cudaFreeHost(p); }
    };
    std::unique_ptr<void, Free> data_;
};

}  // namespace hb_cudnn
