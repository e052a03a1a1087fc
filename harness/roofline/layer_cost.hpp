// What each layer of a training step must do at the least, whatever backend runs it: its
// floating-point operations and the bytes it must move, forward and backward (docs/roofline.md).
// The counts assume no fusion across layers and each tensor of a pass moved once (float32, whole
// batch), and ignore the sum of a value's gradients over its readers. A layer without parameters
// that reads the model's input has no backward pass.
#pragma once

#include "model/graph.hpp"

#include <cstdint>

namespace harness::roofline {

struct Cost {
    int64_t forward_flops = 0, backward_flops = 0;
    int64_t forward_bytes = 0, backward_bytes = 0;
    int64_t flops() const { return forward_flops + backward_flops; }
    int64_t bytes() const { return forward_bytes + backward_bytes; }
    Cost& operator+=(const Cost& other);
};

// One layer of `graph`, forward and backward, over the whole batch:
//   conv2d     forward 2 Cin k k Cout Ho Wo N (+ Cout Ho Wo N for the bias); backward the same for
//              the weights' gradient (+ the bias's sum) and again for the input's, which a layer
//              reading the model's input does not compute. Bytes: forward x, w, b, y; backward
//              dy, x, dw, db, and w and dx for the input's gradient.
//   batchnorm  forward 8 per element (the mean, the variance, normalise, scale and shift),
//              backward 9 (dbeta, dgamma, dx). Bytes: forward x, y and the four per-channel
//              tensors (the running ones read and written); backward dy, x, dx, gamma, dgamma,
//              dbeta.
//   relu       1 per element each way. Bytes: forward x, y; backward dy, x, dx.
//   maxpool2d  3 comparisons per output each way (backward finds the window's maximum again).
//              Bytes: forward x, y; backward dy, x, dx.
//   upsample   forward 0, backward 3 per input element (a 2x2 block's sum). Bytes: x and y each
//              way (y's gradient and x's).
//   add        forward n - 1 per element for n inputs, backward 0: each input's gradient is the
//              output's, shared. Bytes: forward the n inputs and y; backward none.
//   mse_loss   forward 3 per element, backward 2. Bytes: input and target, and backward the
//              input's gradient.
Cost layer_cost(const model::Graph& graph, const model::Layer& layer);

// RMSProp's update of every trainable tensor (hb_optimizer): 9 FLOPs per element, 2 more with
// weight decay and 2 more with momentum; bytes: the parameter read and written, its gradient read
// and its square average read and written (and its momentum buffer read and written). Counted as
// backward work.
Cost optimizer_cost(const model::Graph& graph, bool weight_decay, bool momentum);

}  // namespace harness::roofline
