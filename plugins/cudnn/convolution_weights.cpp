#include "convolution_weights.hpp"

#include "check.hpp"
#include "kernel_math.hpp"
#include "kernels.hpp"

namespace hb_cudnn {

ConvolutionWeights::ConvolutionWeights(const MathMode& mode, float* parameters, float* gradients,
                                       int64_t floats)
    : converts_(mode.converts_weights()),
      parameters_(parameters),
      gradients_(gradients),
      floats_(floats) {
    if (!converts_) return;
    const size_t half = size_t(floats) * 2;
    parameters_copy_ = DeviceBuffer(half);
    gradients_copy_ = DeviceBuffer(half);
}

const void* ConvolutionWeights::weight(const TensorPlan& tensor) const {
    if (!converts_) return parameters_ + tensor.offset;
    return static_cast<const math::bf16*>(parameters_copy_.get()) + tensor.offset;
}

void* ConvolutionWeights::gradient(const TensorPlan& tensor) const {
    if (!converts_) return gradients_ + tensor.offset;
    return static_cast<math::bf16*>(gradients_copy_.get()) + tensor.offset;
}

void ConvolutionWeights::widen(const TensorPlan& tensor, cudaStream_t stream) const {
    if (!converts_) return;
    kernels::from_bf16(gradient(tensor), gradients_ + tensor.offset, tensor.elements, stream);
}

void ConvolutionWeights::refresh(cudaStream_t stream) const {
    if (!converts_) return;
    ErrorContext context("the bf16 copy of the parameters");
    kernels::to_bf16(parameters_, parameters_copy_.get(), floats_, stream);
}

void ConvolutionWeights::clear(cudaStream_t stream) const {
    for (const DeviceBuffer* b : {&parameters_copy_, &gradients_copy_})
        if (b->bytes()) HB_CHECK(cudaMemsetAsync(b->get(), 0, b->bytes(), stream));
}

}  // namespace hb_cudnn
