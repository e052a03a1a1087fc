#include "layouts.hpp"

#include <algorithm>

namespace hb_tensorflow {
namespace {

// Calls f(canonical index, TensorFlow index) for every element of a convolution weight (OIHW,
// HWIO) or of an activation (NCHW, NHWC).
template <class F>
void for_each_weight(const hb::Tensor& t, F f) {
    const int64_t o = t.shape[0], i = t.shape[1], kh = t.shape[2], kw = t.shape[3];
    for (int64_t a = 0; a < o; ++a)
        for (int64_t b = 0; b < i; ++b)
            for (int64_t y = 0; y < kh; ++y)
                for (int64_t x = 0; x < kw; ++x)
                    f(((a * i + b) * kh + y) * kw + x, ((y * kw + x) * i + b) * o + a);
}

template <class F>
void for_each_activation(const hb::Dims& d, F f) {
    for (int64_t n = 0; n < d.n; ++n)
        for (int64_t c = 0; c < d.c; ++c)
            for (int64_t p = 0; p < d.plane(); ++p)
                f((n * d.c + c) * d.plane() + p, (n * d.plane() + p) * d.c + c);
}

}  // namespace

std::vector<int64_t> tensorflow_shape(const hb::Tensor& t) {
    if (t.shape.size() == 4) return {t.shape[2], t.shape[3], t.shape[1], t.shape[0]};
    return t.shape;
}

void oihw_to_hwio(const hb::Tensor& t, const float* from, float* to) {
    if (t.shape.size() != 4) {
        std::copy(from, from + t.elements, to);
        return;
    }
    for_each_weight(t, [&](int64_t oihw, int64_t hwio) { to[hwio] = from[oihw]; });
}

void hwio_to_oihw(const hb::Tensor& t, const float* from, float* to) {
    if (t.shape.size() != 4) {
        std::copy(from, from + t.elements, to);
        return;
    }
    for_each_weight(t, [&](int64_t oihw, int64_t hwio) { to[oihw] = from[hwio]; });
}

void nchw_to_nhwc(const hb::Dims& d, const float* from, float* to) {
    for_each_activation(d, [&](int64_t nchw, int64_t nhwc) { to[nhwc] = from[nchw]; });
}

void nhwc_to_nchw(const hb::Dims& d, const float* from, float* to) {
    for_each_activation(d, [&](int64_t nchw, int64_t nhwc) { to[nchw] = from[nhwc]; });
}

}  // namespace hb_tensorflow
