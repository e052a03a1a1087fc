#include "layouts.hpp"

#include <algorithm>

namespace tensorflow_plugin {

std::vector<int64_t> tensorflow_shape(const hb::Tensor& t) {
    if (t.shape.size() == 4) return {t.shape[2], t.shape[3], t.shape[1], t.shape[0]};
    return t.shape;
}

void oihw_to_hwio(const hb::Tensor& t, const float* from, float* to) {
    if (t.shape.size() != 4) {
        std::copy(from, from + t.elements, to);
        return;
    }
    const int64_t o = t.shape[0], i = t.shape[1], kh = t.shape[2], kw = t.shape[3];
    for (int64_t a = 0; a < o; ++a)
        for (int64_t b = 0; b < i; ++b)
            for (int64_t y = 0; y < kh; ++y)
                for (int64_t x = 0; x < kw; ++x)
                    to[((y * kw + x) * i + b) * o + a] = from[((a * i + b) * kh + y) * kw + x];
}

void hwio_to_oihw(const hb::Tensor& t, const float* from, float* to) {
    if (t.shape.size() != 4) {
        std::copy(from, from + t.elements, to);
        return;
    }
    const int64_t o = t.shape[0], i = t.shape[1], kh = t.shape[2], kw = t.shape[3];
    for (int64_t a = 0; a < o; ++a)
        for (int64_t b = 0; b < i; ++b)
            for (int64_t y = 0; y < kh; ++y)
                for (int64_t x = 0; x < kw; ++x)
                    to[((a * i + b) * kh + y) * kw + x] = from[((y * kw + x) * i + b) * o + a];
}

void nchw_to_nhwc(const hb::Dims& d, const float* from, float* to) {
    for (int64_t n = 0; n < d.n; ++n)
        for (int64_t c = 0; c < d.c; ++c)
            for (int64_t p = 0; p < d.plane(); ++p)
                to[(n * d.plane() + p) * d.c + c] = from[(n * d.c + c) * d.plane() + p];
}

void nhwc_to_nchw(const hb::Dims& d, const float* from, float* to) {
    for (int64_t n = 0; n < d.n; ++n)
        for (int64_t c = 0; c < d.c; ++c)
            for (int64_t p = 0; p < d.plane(); ++p)
                to[(n * d.c + c) * d.plane() + p] = from[(n * d.plane() + p) * d.c + c];
}

}  // namespace tensorflow_plugin
