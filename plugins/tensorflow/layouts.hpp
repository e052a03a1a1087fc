// The canonical layouts of the ABI (NCHW activations, OIHW weights) and TensorFlow's (NHWC,
// HWIO), converted at load and read time, never inside a timed step.
#pragma once

#include "hb/graph.hpp"

#include <cstdint>
#include <vector>

namespace hb_tensorflow {

// A tensor's shape in TensorFlow's layout: convolution weights OIHW -> HWIO, others as they are.
std::vector<int64_t> tensorflow_shape(const hb::Tensor& t);
// Canonical <-> TensorFlow layouts for one tensor (conv weights) and for activations.
void oihw_to_hwio(const hb::Tensor& t, const float* from, float* to);
void hwio_to_oihw(const hb::Tensor& t, const float* from, float* to);
void nchw_to_nhwc(const hb::Dims& d, const float* from, float* to);
void nhwc_to_nchw(const hb::Dims& d, const float* from, float* to);

}  // namespace hb_tensorflow
