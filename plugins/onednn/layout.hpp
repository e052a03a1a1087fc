// Memory layouts as oneDNN describes them: plain descriptors for the canonical exchange format,
// readable names for the manifest ("nChw8c", "OIhw8i8o"), and where a blocked layout keeps its
// elements (its channel padding holds none).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace hb_onednn {

// Dense row-major float32 of the given shape (rank 1 to 4): NCHW, OIHW, [C].
dnnl::memory::desc plain_desc(const std::vector<int64_t>& shape);

// Floats in a descriptor's buffer, channel padding included.
int64_t floats_of(const dnnl::memory::desc& md);

// Bytes of a descriptor beyond its elements: blocked layouts pad channels to the block size.
bool has_padding(const dnnl::memory::desc& md);

// The format tag spelled from the descriptor's strides and blocks, with `letters` naming the
// dimensions in logical order ("nchw" for activations, "oihw" for weights): outer dimensions by
// decreasing stride, upper case when blocked, then the inner blocks ("nChw8c").
std::string layout_name(const dnnl::memory::desc& md, const char* letters);

// Position (in elements) of the element at `index` (one entry per dimension).
int64_t physical_offset(const dnnl::memory::desc& md, const int64_t* index);

// The channel block of a dense activation layout: 1 for NCHW, B for nChw<B>c, 0 for any other.
int channel_block(const dnnl::memory::desc& md);

// One byte per float of the descriptor's buffer: 1 where an element lives, 0 in padding.
std::vector<uint8_t> element_mask(const dnnl::memory::desc& md);

}  // namespace hb_onednn
