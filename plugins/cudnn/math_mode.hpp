// The math mode (fp32, tf32 or bf16) as one policy: everything the step does differently by mode is
// asked of it. The element type of activations and their gradients, the cuDNN data type of the
// convolutions' tensors and filters (float accumulation in every mode), the math type their
// descriptors request and run with, the algorithms and engines admitted, and whether the
// convolutions read a bfloat16 copy of the float32 weights (ConvolutionWeights,
// convolution_weights.hpp, holds it) and batch norm and a convolution's bias run as the backend's
// own kernels (channel_kernels.hpp). Parameters, their gradients, optimizer state and running
// statistics are float32 in every mode.
#pragma once

#include "options.hpp"

#include <cudnn.h>

#include <cstdint>

namespace hb_cudnn {

// An engine's numerical notes that the math modes care about.
struct EngineNotes {
    bool tensor_core = false;                  // TF32 on float data
    bool down_converts = false;                // converts its inputs to a narrower type
    bool reduced_precision_reduction = false;  // accumulates in less than float
};

class MathMode {
public:
    explicit MathMode(Math math) : math_(math) {}
    Math math() const { return math_; }
    const char* name() const { return to_string(math_); }

    // Activations and their gradients: float32, or bfloat16 in bf16.
    Storage storage() const;
    // "float32" or "bfloat16": the activations' type as the manifest names it.
    const char* activation_type() const;
    // A convolution's input, output and filter: CUDNN_DATA_FLOAT, or CUDNN_DATA_BFLOAT16 in bf16.
    cudnnDataType_t data_type() const;
    // bf16: convolutions read a bfloat16 copy of their float32 weights and write bfloat16 weight
    // gradients, which are widened into the float32 gradient block.
    bool converts_weights() const;
    // bf16: batch norm (with its fused ReLU) and a convolution's bias are the backend's own
    // kernels, not cuDNN's calls.
    bool own_channel_kernels() const;
    // The oldest GPU generation (compute capability major) the mode runs on: 8 for bf16.
    int minimum_compute_capability() const;

    // Legacy convolution calls: the math type each direction's descriptor requests while its
    // algorithms are measured (FMA in fp32, tensor ops otherwise), whether a measured result
    // qualifies (no tensor-op result in fp32), and the math type the direction then runs with (in
    // fp32 always FMA, since CUDNN_DEFAULT_MATH would let cuDNN use TF32 on Ampere and later).
    cudnnMathType_t requested_math() const;
    bool admits(cudnnMathType_t measured) const;
    cudnnMathType_t run_math(cudnnMathType_t measured) const;
    // Graph API: whether an engine computes what the mode promises. Every mode accumulates in
    // float from inputs of its own type, and fp32 admits no tensor-core (TF32) engine.
    bool admits(const EngineNotes& notes) const;

private:
    Math math_;
};

}  // namespace hb_cudnn
