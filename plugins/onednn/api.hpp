// The oneDNN calls whose form changed in oneDNN 3.0, written once for both major versions: 3.x
// removed the operation descriptors (a primitive descriptor takes the engine and the operation's
// parameters directly) and made memory descriptors opaque (queried, not read as a struct). The
// plugin builds against Debian's oneDNN 2.6 and against today's 3.x (docs/backends.md).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <vector>

namespace hb_onednn::api {

using md = dnnl::memory::desc;
using dims = dnnl::memory::dims;
using dnnl::algorithm;
using dnnl::prop_kind;

// ------------------------------------------------------------------ memory descriptors

inline dims logical_dims(const md& m) {
#if DNNL_VERSION_MAJOR >= 3
    return m.get_dims();
#else
    return m.dims();
#endif
}

// A blocked layout, read off a descriptor: outer strides per dimension, then the inner blocks.
struct Blocking {
    bool blocked = false;  // false: an opaque layout, nothing else is set
    int ndims = 0;
    int64_t offset0 = 0;
    dims padded_dims, strides, inner_blks, inner_idxs;
};

inline Blocking blocking(const md& m) {
    Blocking b;
#if DNNL_VERSION_MAJOR >= 3
    if (m.get_format_kind() != dnnl::memory::format_kind::blocked) return b;
    b.ndims = m.get_ndims();
    b.offset0 = m.get_submemory_offset();
    b.padded_dims = m.get_padded_dims();
    b.strides = m.get_strides();
    b.inner_blks = m.get_inner_blks();
    b.inner_idxs = m.get_inner_idxs();
#else
    const dnnl_memory_desc_t& d = m.data;
    if (d.format_kind != dnnl_blocked) return b;
    const dnnl_blocking_desc_t& k = d.format_desc.blocking;
    b.ndims = d.ndims;
    b.offset0 = d.offset0;
    b.padded_dims.assign(d.padded_dims, d.padded_dims + d.ndims);
    b.strides.assign(k.strides, k.strides + d.ndims);
    b.inner_blks.assign(k.inner_blks, k.inner_blks + k.inner_nblks);
    b.inner_idxs.assign(k.inner_idxs, k.inner_idxs + k.inner_nblks);
#endif
    b.blocked = true;
    return b;
}

// ------------------------------------------------------------------ primitive descriptors
// `bias` may be null: the operation has none.

inline dnnl::convolution_forward::primitive_desc convolution_forward(
    const dnnl::engine& e, const md& src, const md& weights, const md* bias, const md& dst,
    const dims& stride, const dims& padding, const dnnl::primitive_attr& attr) {
    const auto prop = prop_kind::forward_training;
    const auto direct = algorithm::convolution_direct;
#if DNNL_VERSION_MAJOR >= 3
    if (bias) return {e, prop, direct, src, weights, *bias, dst, stride, padding, padding, attr};
    return {e, prop, direct, src, weights, dst, stride, padding, padding, attr};
#else
    if (bias) return {{prop, direct, src, weights, *bias, dst, stride, padding, padding}, attr, e};
    return {{prop, direct, src, weights, dst, stride, padding, padding}, attr, e};
#endif
}

inline dnnl::convolution_backward_data::primitive_desc convolution_backward_data(
    const dnnl::engine& e, const md& diff_src, const md& weights, const md& diff_dst,
    const dims& stride, const dims& padding, const dnnl::primitive_attr& attr,
    const dnnl::convolution_forward::primitive_desc& hint) {
    const auto direct = algorithm::convolution_direct;
#if DNNL_VERSION_MAJOR >= 3
    return {e, direct, diff_src, weights, diff_dst, stride, padding, padding, hint, attr};
#else
    return {{direct, diff_src, weights, diff_dst, stride, padding, padding}, attr, e, hint};
#endif
}

inline dnnl::convolution_backward_weights::primitive_desc convolution_backward_weights(
    const dnnl::engine& e, const md& src, const md& diff_weights, const md* diff_bias,
    const md& diff_dst, const dims& stride, const dims& padding, const dnnl::primitive_attr& attr,
    const dnnl::convolution_forward::primitive_desc& hint) {
    const auto direct = algorithm::convolution_direct;
#if DNNL_VERSION_MAJOR >= 3
    if (diff_bias)
        return {e,      direct,  src,     diff_weights, *diff_bias, diff_dst,
                stride, padding, padding, hint,         attr};
    return {e, direct, src, diff_weights, diff_dst, stride, padding, padding, hint, attr};
#else
    if (diff_bias)
        return {{direct, src, diff_weights, *diff_bias, diff_dst, stride, padding, padding},
                attr,
                e,
                hint};
    return {{direct, src, diff_weights, diff_dst, stride, padding, padding}, attr, e, hint};
#endif
}

inline dnnl::batch_normalization_forward::primitive_desc batch_normalization_forward(
    const dnnl::engine& e, const md& data, float eps, dnnl::normalization_flags flags,
    const dnnl::primitive_attr& attr) {
#if DNNL_VERSION_MAJOR >= 3
    return {e, prop_kind::forward_training, data, data, eps, flags, attr};
#else
    return {{prop_kind::forward_training, data, eps, flags}, attr, e};
#endif
}

inline dnnl::batch_normalization_backward::primitive_desc batch_normalization_backward(
    const dnnl::engine& e, const md& data, float eps, dnnl::normalization_flags flags,
    const dnnl::primitive_attr& attr,
    const dnnl::batch_normalization_forward::primitive_desc& hint) {
#if DNNL_VERSION_MAJOR >= 3
    return {e, prop_kind::backward, data, data, data, eps, flags, hint, attr};
#else
    return {{prop_kind::backward, data, data, eps, flags}, attr, e, hint};
#endif
}

inline dnnl::eltwise_forward::primitive_desc relu_forward(const dnnl::engine& e, const md& data,
                                                          const dnnl::primitive_attr& attr) {
#if DNNL_VERSION_MAJOR >= 3
    return {e, prop_kind::forward_training, algorithm::eltwise_relu, data, data, 0.0f, 0.0f, attr};
#else
    return {{prop_kind::forward_training, algorithm::eltwise_relu, data, 0.0f, 0.0f}, attr, e};
#endif
}

inline dnnl::eltwise_backward::primitive_desc relu_backward(
    const dnnl::engine& e, const md& data, const dnnl::primitive_attr& attr,
    const dnnl::eltwise_forward::primitive_desc& hint) {
#if DNNL_VERSION_MAJOR >= 3
    return {e, algorithm::eltwise_relu, data, data, data, 0.0f, 0.0f, hint, attr};
#else
    return {{algorithm::eltwise_relu, data, data, 0.0f, 0.0f}, attr, e, hint};
#endif
}

// 2x2 windows with stride 2, no padding.
inline dnnl::pooling_forward::primitive_desc max_pooling_forward(const dnnl::engine& e,
                                                                 const md& src, const md& dst,
                                                                 const dnnl::primitive_attr& attr) {
    const dims two{2, 2}, zero{0, 0};
#if DNNL_VERSION_MAJOR >= 3
    return {e,
            prop_kind::forward_training,
            algorithm::pooling_max,
            src,
            dst,
            two,
            two,
            zero,
            zero,
            zero,
            attr};
#else
    return {{prop_kind::forward_training, algorithm::pooling_max, src, dst, two, two, zero, zero},
            attr,
            e};
#endif
}

inline dnnl::pooling_backward::primitive_desc max_pooling_backward(
    const dnnl::engine& e, const md& diff_src, const md& diff_dst, const dnnl::primitive_attr& attr,
    const dnnl::pooling_forward::primitive_desc& hint) {
    const dims two{2, 2}, zero{0, 0};
#if DNNL_VERSION_MAJOR >= 3
    return {e, algorithm::pooling_max, diff_src, diff_dst, two, two, zero, zero, zero, hint, attr};
#else
    return {{algorithm::pooling_max, diff_src, diff_dst, two, two, zero, zero}, attr, e, hint};
#endif
}

inline dnnl::resampling_forward::primitive_desc nearest_forward(const dnnl::engine& e,
                                                                const md& src, const md& dst,
                                                                const dnnl::primitive_attr& attr) {
#if DNNL_VERSION_MAJOR >= 3
    return {e, prop_kind::forward_training, algorithm::resampling_nearest, src, dst, attr};
#else
    return {{prop_kind::forward_training, algorithm::resampling_nearest, src, dst}, attr, e};
#endif
}

inline dnnl::resampling_backward::primitive_desc nearest_backward(
    const dnnl::engine& e, const md& diff_src, const md& diff_dst, const dnnl::primitive_attr& attr,
    const dnnl::resampling_forward::primitive_desc& hint) {
#if DNNL_VERSION_MAJOR >= 3
    return {e, algorithm::resampling_nearest, diff_src, diff_dst, hint, attr};
#else
    return {{algorithm::resampling_nearest, diff_src, diff_dst}, attr, e, hint};
#endif
}

inline dnnl::sum::primitive_desc sum(const dnnl::engine& e, const md& dst,
                                     const std::vector<md>& sources,
                                     const dnnl::primitive_attr& attr) {
    const std::vector<float> scales(sources.size(), 1.0f);
#if DNNL_VERSION_MAJOR >= 3
    return {e, dst, scales, sources, attr};
#else
    return {dst, scales, sources, e, attr};
#endif
}

}  // namespace hb_onednn::api
