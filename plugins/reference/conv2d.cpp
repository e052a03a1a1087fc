#include "layers.hpp"
#include "sum_terms.hpp"

#include <algorithm>

namespace hb_reference {
namespace {

// The output positions o in [0, count) whose input position o * stride + offset lies in [0, size).
struct ValidRange {
    int64_t begin, end;
};
ValidRange valid_outputs(int64_t offset, int64_t stride, int64_t size, int64_t count) {
    int64_t begin = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
    int64_t end = size - offset <= 0 ? 0 : (size - offset + stride - 1) / stride;
    end = std::min(end, count);
    begin = std::min(begin, end);
    return {begin, end};
}

// col[(c, ki, kj)][(n, oh, ow)] = x[n][c][oh * stride - padding + ki][ow * stride - padding + kj],
// zero outside the image.
template <class T>
void im2col(ThreadPool& pool, const ConvShape& s, const T* x, T* col) {
    const int64_t k = s.kernel, out_h = s.output.h, out_w = s.output.w;
    const int64_t cols = s.input.n * s.output.plane();
    parallel_for(pool, s.patch_size(), 1, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const int64_t c = r / (k * k), ki = (r / k) % k, kj = r % k;
            const ValidRange rows = valid_outputs(ki - s.padding, s.stride, s.input.h, out_h);
            const ValidRange cs = valid_outputs(kj - s.padding, s.stride, s.input.w, out_w);
            T* out = col + r * cols;
            for (int64_t n = 0; n < s.input.n; ++n) {
                const T* plane = x + (n * s.input.c + c) * s.input.plane();
                for (int64_t oh = 0; oh < out_h; ++oh, out += out_w) {
                    if (oh < rows.begin || oh >= rows.end) {
                        std::fill(out, out + out_w, T(0));
                        continue;
                    }
                    const T* in = plane + (oh * s.stride - s.padding + ki) * s.input.w;
                    const int64_t shift = kj - s.padding;
                    std::fill(out, out + cs.begin, T(0));
                    for (int64_t ow = cs.begin; ow < cs.end; ++ow)
                        out[ow] = in[ow * s.stride + shift];
                    std::fill(out + cs.end, out + out_w, T(0));
                }
            }
        }
    });
}

// The adjoint of im2col: dx[n][c][ih][iw] += every col entry that was copied from it, in the order
// of (ki, kj). One input channel per task, so each dx element is written by one thread.
template <class T>
void col2im_add(ThreadPool& pool, const ConvShape& s, const T* col, T* dx) {
    const int64_t k = s.kernel, out_h = s.output.h, out_w = s.output.w;
    const int64_t cols = s.input.n * s.output.plane();
    parallel_for(pool, s.input.c, 1, [&](int64_t c0, int64_t c1) {
        for (int64_t c = c0; c < c1; ++c) {
            for (int64_t ki = 0; ki < k; ++ki) {
                for (int64_t kj = 0; kj < k; ++kj) {
                    const ValidRange rows =
                        valid_outputs(ki - s.padding, s.stride, s.input.h, out_h);
                    const ValidRange cs = valid_outputs(kj - s.padding, s.stride, s.input.w, out_w);
                    const int64_t shift = kj - s.padding;
                    const T* in = col + ((c * k + ki) * k + kj) * cols;
                    for (int64_t n = 0; n < s.input.n; ++n) {
                        T* plane = dx + (n * s.input.c + c) * s.input.plane();
                        for (int64_t oh = rows.begin; oh < rows.end; ++oh) {
                            T* out = plane + (oh * s.stride - s.padding + ki) * s.input.w;
                            const T* src = in + (n * out_h + oh) * out_w;
                            for (int64_t ow = cs.begin; ow < cs.end; ++ow)
                                out[ow * s.stride + shift] += src[ow];
                        }
                    }
                }
            }
        }
    });
}

// The convolution's input as the matrix of the product weight x input: the tensor itself when
// pointwise, otherwise its im2col expansion written to `workspace`.
template <class T>
Matrix<const T> patches(ThreadPool& pool, const ConvShape& s, const T* x, T* workspace) {
    if (s.pointwise())
        return const_view(channels_by_pixels(x, s.input.n, s.input.c, s.input.plane()));
    im2col(pool, s, x, workspace);
    return const_view(dense(workspace, s.patch_size(), s.input.n * s.output.plane()));
}

}  // namespace

int64_t ConvShape::workspace_elements() const {
    return pointwise() ? 0 : patch_size() * input.n * output.plane();
}

int64_t conv_output_size(int64_t input, int64_t kernel, int64_t stride, int64_t padding) {
    return (input + 2 * padding - kernel) / stride + 1;
}

template <class T>
void conv2d_forward(Gemm<T>& gemm, const ConvShape& s, const T* x, const T* weight, const T* bias,
                    T* y, T* workspace) {
    ThreadPool& pool = gemm.pool();
    const Matrix<const T> input = patches(pool, s, x, workspace);
    const Matrix<const T> w = const_view(dense(weight, s.output.c, s.patch_size()));
    gemm.multiply(channels_by_pixels(y, s.output.n, s.output.c, s.output.plane()), w, input, false);
    if (!bias) return;
    const int64_t plane = s.output.plane();
    parallel_for(pool, s.output.n * s.output.c, 1, [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p) {
            const T b = bias[p % s.output.c];
            T* out = y + p * plane;
            for (int64_t i = 0; i < plane; ++i) out[i] += b;
        }
    });
}

template <class T>
void conv2d_backward(Gemm<T>& gemm, const ConvShape& s, const T* x, const T* weight, const T* dy,
                     T* dx, T* dweight, T* dbias, T* workspace) {
    ThreadPool& pool = gemm.pool();
    const int64_t plane = s.output.plane();
    const Matrix<const T> grad_out =
        const_view(channels_by_pixels(dy, s.output.n, s.output.c, plane));
    if (dbias) {
        parallel_for(pool, s.output.c, 1, [&](int64_t o0, int64_t o1) {
            for (int64_t o = o0; o < o1; ++o) {
                double sum = 0;
                for (int64_t n = 0; n < s.output.n; ++n) {
                    const T* g = dy + (n * s.output.c + o) * plane;
                    sum += sum_terms(plane, [&](int64_t i) { return double(g[i]); });
                }
                dbias[o] += static_cast<T>(sum);
            }
        });
    }
    if (dweight) {
        const Matrix<const T> input = patches(pool, s, x, workspace);
        gemm.multiply(dense(dweight, s.output.c, s.patch_size()), grad_out, input.transposed(),
                      true);
    }
    if (!dx) return;
    const Matrix<const T> w_t = const_view(dense(weight, s.output.c, s.patch_size())).transposed();
    if (s.pointwise()) {
        gemm.multiply(channels_by_pixels(dx, s.input.n, s.input.c, s.input.plane()), w_t, grad_out,
                      true);
        return;
    }
    gemm.multiply(dense(workspace, s.patch_size(), s.input.n * plane), w_t, grad_out, false);
    col2im_add(pool, s, workspace, dx);
}

template void conv2d_forward<float>(Gemm<float>&, const ConvShape&, const float*, const float*,
                                    const float*, float*, float*);
template void conv2d_forward<double>(Gemm<double>&, const ConvShape&, const double*, const double*,
                                     const double*, double*, double*);
template void conv2d_backward<float>(Gemm<float>&, const ConvShape&, const float*, const float*,
                                     const float*, float*, float*, float*, float*);
template void conv2d_backward<double>(Gemm<double>&, const ConvShape&, const double*, const double*,
                                      const double*, double*, double*, double*, double*);

}  // namespace hb_reference
