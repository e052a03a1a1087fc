// The weights as the convolutions read them and their gradients as the convolutions write them, as
// the math mode says (MathMode::converts_weights): the float32 parameter and gradient blocks
// themselves, or bfloat16 copies of both blocks at the same offsets. The parameters' copy is
// written by each RMSProp update (update_copy) and by refresh; a weight gradient written into the
// gradients' copy is widened into the float32 block.
#pragma once

#include "handles.hpp"
#include "math_mode.hpp"
#include "plan.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hb_cudnn {

class ConvolutionWeights {
public:
    ConvolutionWeights() = default;
    // `parameters` and `gradients`: the float32 blocks of `floats` floats. Allocates the copies
    // when the mode converts.
    ConvolutionWeights(const MathMode& mode, float* parameters, float* gradients, int64_t floats);

    const void* weight(const TensorPlan& tensor) const;
    void* gradient(const TensorPlan& tensor) const;
    // Enqueues the float32 value of `tensor`'s gradient into the gradient block, after a
    // convolution wrote it; nothing when the convolutions write the block itself.
    void widen(const TensorPlan& tensor, cudaStream_t stream) const;
    // Enqueues the copy of the parameters, after they were written from outside the step.
    void refresh(cudaStream_t stream) const;
    // Where RMSProp writes the updated parameters rounded to bf16; null when nothing converts.
    void* update_copy() const { return parameters_copy_.get(); }

    // Enqueues zeroing the copies.
    void clear(cudaStream_t stream) const;
    uint64_t device_bytes() const { return parameters_copy_.bytes() + gradients_copy_.bytes(); }

private:
    bool converts_ = false;
    float* parameters_ = nullptr;
    float* gradients_ = nullptr;
    int64_t floats_ = 0;
    DeviceBuffer parameters_copy_, gradients_copy_;
};

}  // namespace hb_cudnn
