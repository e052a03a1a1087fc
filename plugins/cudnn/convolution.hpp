// cuDNN descriptors of one convolution layer and the choice of its forward, backward-data and
// backward-filter algorithms, measured on the device at setup (cudnnFind*AlgorithmEx).
#pragma once

#include "handles.hpp"
#include "math_mode.hpp"
#include "options.hpp"
#include "plan.hpp"

#include <cstddef>
#include <map>
#include <string>

namespace hb_cudnn {

struct AlgorithmChoice {
    int algorithm = -1;
    std::string name;
    size_t workspace = 0;
    cudnnMathType_t math = CUDNN_DEFAULT_MATH;
    float milliseconds = 0;
};

struct ConvolutionChoice {
    AlgorithmChoice forward, backward_data, backward_filter;  // backward_data unset when unused
};

// Descriptors of one conv2d layer; every direction has its own convolution descriptor so that
// each runs with the math type its algorithm was measured with.
struct ConvolutionDescriptors {
    TensorDescriptor x, y, bias;  // bias: only where cuDNN adds it (not own_channel_kernels)
    FilterDescriptor w;
    ConvolutionDescriptor forward, backward_data, backward_filter;
};

// The shape of a convolution, what its measured choices are cached by.
std::string convolution_key(const LayerPlan& layer);

cudnnTensorFormat_t tensor_format(Layout layout);
void set_tensor(cudnnTensorDescriptor_t descriptor, const Shape& shape, Layout layout,
                cudnnDataType_t type = CUDNN_DATA_FLOAT);
ConvolutionDescriptors make_convolution_descriptors(const LayerPlan& layer, Layout layout,
                                                    const MathMode& mode);

// What a search times its candidates on: tensors large enough for every convolution of a plan,
// zeroed, and a workspace of the limit.
struct SearchScratch {
    SearchScratch(cudnnHandle_t handle, const Plan& plan, size_t workspace_limit);
    DeviceBuffer x, y, w, workspace;
};

// Measures every algorithm cuDNN offers for a convolution and keeps the fastest one that
// succeeds within the workspace limit and respects the math mode (no TF32 in fp32). Results are
// cached by shape, since many layers of a network share one.
class AlgorithmSearch {
public:
    // Scratch tensors large enough for every convolution of `plan` are allocated here.
    AlgorithmSearch(cudnnHandle_t handle, const Plan& plan, size_t workspace_limit,
                    const MathMode& mode);
    ConvolutionChoice choose(const LayerPlan& layer, ConvolutionDescriptors& descriptors,
                             bool backward_data);
    size_t workspace_limit() const { return workspace_limit_; }
    int measured() const { return measured_; }

private:
    cudnnHandle_t handle_;
    size_t workspace_limit_;
    MathMode mode_;
    SearchScratch scratch_;
    std::map<std::string, ConvolutionChoice> cache_;
    int measured_ = 0;
};

}  // namespace hb_cudnn
