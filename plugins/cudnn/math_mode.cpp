#include "math_mode.hpp"

namespace hb_cudnn {

Storage MathMode::storage() const {
    return math_ == Math::bf16 ? Storage::bf16 : Storage::f32;
}

const char* MathMode::activation_type() const {
    return storage() == Storage::bf16 ? "bfloat16" : "float32";
}

cudnnDataType_t MathMode::data_type() const {
    return storage() == Storage::bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

bool MathMode::converts_weights() const {
    return math_ == Math::bf16;
}

bool MathMode::own_channel_kernels() const {
    return math_ == Math::bf16;
}

int MathMode::minimum_compute_capability() const {
    return math_ == Math::bf16 ? 8 : 0;
}

cudnnMathType_t MathMode::requested_math() const {
    return math_ == Math::fp32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
}

bool MathMode::admits(cudnnMathType_t measured) const {
    return math_ != Math::fp32 || measured == CUDNN_FMA_MATH || measured == CUDNN_DEFAULT_MATH;
}

cudnnMathType_t MathMode::run_math(cudnnMathType_t measured) const {
    return math_ == Math::fp32 ? CUDNN_FMA_MATH : measured;
}

bool MathMode::admits(const EngineNotes& notes) const {
    if (notes.down_converts || notes.reduced_precision_reduction) return false;
    return math_ != Math::fp32 || !notes.tensor_core;
}

}  // namespace hb_cudnn
