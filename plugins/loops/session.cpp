#include "session.hpp"

#include "hb/options.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace hb_loops {

namespace {

using hb::Dims;

// The outputs o in [begin, end) of a convolution's row or column whose input, o stride + offset -
// padding for the kernel's offset, lies inside [0, size).
struct Span {
    int64_t begin, end;
};
Span inside(int64_t offset, int64_t outputs, int64_t size, int64_t stride, int64_t padding) {
    const int64_t shift = offset - padding;
    const int64_t begin = shift >= 0 ? 0 : (stride - 1 - shift) / stride;
    const int64_t end = shift >= size ? 0 : std::min(outputs, (size - 1 - shift) / stride + 1);
    return {begin, std::max(begin, end)};
}

// Calls tap(i, j, rows, cols) for each offset (i, j) of a convolution's kernel, with the output
// rows and columns whose input lies inside the image at that offset.
template <class Tap>
void for_each_tap(const hb::LayerPass& p, Tap tap) {
    const Dims x = p.x_dims[0], y = p.y_dims;
    const int64_t k = p.layer.kernel, s = p.layer.stride, pad = p.layer.padding;
    for (int64_t i = 0; i < k; ++i)
        for (int64_t j = 0; j < k; ++j)
            tap(i, j, inside(i, y.h, x.h, s, pad), inside(j, y.w, x.w, s, pad));
}

void store(const std::vector<double>& from, float* to) {
    for (size_t i = 0; i < from.size(); ++i) to[i] = static_cast<float>(from[i]);
}

}  // namespace

Session::Session(const hb_session_desc& desc) : hb::HostSession(desc, "the loops backend") {
    hb::Options(desc.num_options, desc.options, {});  // it takes none
}

void Session::conv2d(const hb::LayerPass& p) {
    const Dims x = p.x_dims[0], y = p.y_dims;
    const int64_t k = p.layer.kernel, s = p.layer.stride, pad = p.layer.padding;
    std::vector<double> sum(static_cast<size_t>(y.plane()));
    for (int64_t n = 0; n < y.n; ++n)
        for (int64_t o = 0; o < y.c; ++o) {
            std::fill(sum.begin(), sum.end(), p.bias ? p.bias[o] : 0.0);
            for (int64_t c = 0; c < x.c; ++c) {
                const float* in = p.x[0] + (n * x.c + c) * x.plane();
                for_each_tap(p, [&](int64_t i, int64_t j, Span rows, Span cols) {
                    const double w = p.weight[((o * x.c + c) * k + i) * k + j];
                    for (int64_t oh = rows.begin; oh < rows.end; ++oh)
                        for (int64_t ow = cols.begin; ow < cols.end; ++ow)
                            sum[static_cast<size_t>(oh * y.w + ow)] +=
                                w * in[(oh * s + i - pad) * x.w + ow * s + j - pad];
                });
            }
            store(sum, p.y + (n * y.c + o) * y.plane());
        }
}

void Session::conv2d_backward(const hb::LayerPass& p) {
    const Dims x = p.x_dims[0], y = p.y_dims;
    const int64_t k = p.layer.kernel, s = p.layer.stride, pad = p.layer.padding;
    auto dy = [&](int64_t n, int64_t o) { return p.dy + (n * y.c + o) * y.plane(); };
    auto in = [&](int64_t n, int64_t c) { return p.x[0] + (n * x.c + c) * x.plane(); };
    if (p.dbias)
        for (int64_t o = 0; o < y.c; ++o) {
            double sum = 0;
            for (int64_t n = 0; n < y.n; ++n)
                for (int64_t e = 0; e < y.plane(); ++e) sum += dy(n, o)[e];
            p.dbias[o] = static_cast<float>(sum);
        }
    for (int64_t o = 0; o < y.c; ++o)
        for (int64_t c = 0; c < x.c; ++c)
            for_each_tap(p, [&](int64_t i, int64_t j, Span rows, Span cols) {
                double sum = 0;
                for (int64_t n = 0; n < y.n; ++n)
                    for (int64_t oh = rows.begin; oh < rows.end; ++oh)
                        for (int64_t ow = cols.begin; ow < cols.end; ++ow)
                            sum += double(dy(n, o)[oh * y.w + ow]) *
                                   in(n, c)[(oh * s + i - pad) * x.w + ow * s + j - pad];
                p.dweight[((o * x.c + c) * k + i) * k + j] = static_cast<float>(sum);
            });
    if (!p.dx[0]) return;
    std::vector<double> sum(static_cast<size_t>(x.plane()));
    for (int64_t n = 0; n < x.n; ++n)
        for (int64_t c = 0; c < x.c; ++c) {
            std::fill(sum.begin(), sum.end(), 0.0);
            for (int64_t o = 0; o < y.c; ++o)
                for_each_tap(p, [&](int64_t i, int64_t j, Span rows, Span cols) {
                    const double w = p.weight[((o * x.c + c) * k + i) * k + j];
                    for (int64_t oh = rows.begin; oh < rows.end; ++oh)
                        for (int64_t ow = cols.begin; ow < cols.end; ++ow)
                            sum[static_cast<size_t>((oh * s + i - pad) * x.w + ow * s + j - pad)] +=
                                w * dy(n, o)[oh * y.w + ow];
                });
            store(sum, p.dx[0] + (n * x.c + c) * x.plane());
        }
}

// Saves x^ = (x - mean) / sqrt(var + eps), then 1 / sqrt(var + eps) per channel.
void Session::batchnorm(const hb::LayerPass& p) {
    const Dims d = p.x_dims[0];
    const int64_t m = d.n * d.plane();
    p.saved.resize(static_cast<size_t>(d.elements() + d.c));
    float* normalized = p.saved.data();
    for (int64_t c = 0; c < d.c; ++c) {
        auto at = [&](int64_t n, int64_t e) { return (n * d.c + c) * d.plane() + e; };
        double sum = 0, squares = 0;
        for (int64_t n = 0; n < d.n; ++n)
            for (int64_t e = 0; e < d.plane(); ++e) sum += p.x[0][at(n, e)];
        const double mean = sum / double(m);
        for (int64_t n = 0; n < d.n; ++n)
            for (int64_t e = 0; e < d.plane(); ++e)
                squares += (p.x[0][at(n, e)] - mean) * (p.x[0][at(n, e)] - mean);
        const double var = squares / double(m), inv = 1 / std::sqrt(var + p.layer.eps);
        const double gamma = p.weight ? p.weight[c] : 1.0, beta = p.bias ? p.bias[c] : 0.0;
        for (int64_t n = 0; n < d.n; ++n)
            for (int64_t e = 0; e < d.plane(); ++e) {
                const double xhat = (p.x[0][at(n, e)] - mean) * inv;
                normalized[at(n, e)] = static_cast<float>(xhat);
                p.y[at(n, e)] = static_cast<float>(gamma * xhat + beta);
            }
        p.saved[static_cast<size_t>(d.elements() + c)] = static_cast<float>(inv);
        const double momentum = p.layer.momentum;
        if (p.running_mean)
            p.running_mean[c] =
                static_cast<float>((1 - momentum) * p.running_mean[c] + momentum * mean);
        if (p.running_var)
            p.running_var[c] = static_cast<float>((1 - momentum) * p.running_var[c] +
                                                  momentum * var * double(m) / double(m - 1));
    }
}

void Session::batchnorm_backward(const hb::LayerPass& p) {
    const Dims d = p.x_dims[0];
    const double m = double(d.n * d.plane());
    const float* normalized = p.saved.data();
    for (int64_t c = 0; c < d.c; ++c) {
        auto at = [&](int64_t n, int64_t e) { return (n * d.c + c) * d.plane() + e; };
        double dbeta = 0, dgamma = 0;
        for (int64_t n = 0; n < d.n; ++n)
            for (int64_t e = 0; e < d.plane(); ++e) {
                dbeta += p.dy[at(n, e)];
                dgamma += double(p.dy[at(n, e)]) * normalized[at(n, e)];
            }
        if (p.dbias) p.dbias[c] = static_cast<float>(dbeta);
        if (p.dweight) p.dweight[c] = static_cast<float>(dgamma);
        if (!p.dx[0]) continue;
        const double scale =
            (p.weight ? p.weight[c] : 1.0) * p.saved[static_cast<size_t>(d.elements() + c)];
        for (int64_t n = 0; n < d.n; ++n)
            for (int64_t e = 0; e < d.plane(); ++e)
                p.dx[0][at(n, e)] = static_cast<float>(
                    scale * (p.dy[at(n, e)] - dbeta / m - normalized[at(n, e)] * dgamma / m));
    }
}

void Session::relu(const hb::LayerPass& p) {
    for (int64_t i = 0; i < p.y_dims.elements(); ++i) p.y[i] = p.x[0][i] > 0 ? p.x[0][i] : 0.0f;
}

void Session::relu_backward(const hb::LayerPass& p) {
    if (!p.dx[0]) return;
    for (int64_t i = 0; i < p.y_dims.elements(); ++i) p.dx[0][i] = p.x[0][i] > 0 ? p.dy[i] : 0.0f;
}

namespace {

// The offset in its input plane of the first maximum, in row-major order, of output (oh, ow)'s
// 2x2 window.
int64_t window_max(const float* plane, int64_t width, int64_t oh, int64_t ow) {
    const int64_t top = 2 * oh * width + 2 * ow;
    int64_t best = top;
    for (int64_t at : {top + 1, top + width, top + width + 1})
        if (plane[at] > plane[best]) best = at;
    return best;
}

}  // namespace

void Session::maxpool2d(const hb::LayerPass& p) {
    const Dims x = p.x_dims[0], y = p.y_dims;
    for (int64_t plane = 0; plane < y.n * y.c; ++plane)
        for (int64_t oh = 0; oh < y.h; ++oh)
            for (int64_t ow = 0; ow < y.w; ++ow) {
                const float* in = p.x[0] + plane * x.plane();
                p.y[plane * y.plane() + oh * y.w + ow] = in[window_max(in, x.w, oh, ow)];
            }
}

void Session::maxpool2d_backward(const hb::LayerPass& p) {
    if (!p.dx[0]) return;
    const Dims x = p.x_dims[0], y = p.y_dims;
    std::fill(p.dx[0], p.dx[0] + x.elements(), 0.0f);
    for (int64_t plane = 0; plane < y.n * y.c; ++plane)
        for (int64_t oh = 0; oh < y.h; ++oh)
            for (int64_t ow = 0; ow < y.w; ++ow) {
                const int64_t at = window_max(p.x[0] + plane * x.plane(), x.w, oh, ow);
                p.dx[0][plane * x.plane() + at] = p.dy[plane * y.plane() + oh * y.w + ow];
            }
}

void Session::upsample(const hb::LayerPass& p) {
    const Dims x = p.x_dims[0], y = p.y_dims;
    for (int64_t plane = 0; plane < y.n * y.c; ++plane)
        for (int64_t h = 0; h < y.h; ++h)
            for (int64_t w = 0; w < y.w; ++w)
                p.y[plane * y.plane() + h * y.w + w] =
                    p.x[0][plane * x.plane() + (h / 2) * x.w + w / 2];
}

void Session::upsample_backward(const hb::LayerPass& p) {
    if (!p.dx[0]) return;
    const Dims x = p.x_dims[0], y = p.y_dims;
    for (int64_t plane = 0; plane < x.n * x.c; ++plane)
        for (int64_t h = 0; h < x.h; ++h)
            for (int64_t w = 0; w < x.w; ++w) {
                const float* dy = p.dy + plane * y.plane() + 2 * h * y.w + 2 * w;
                p.dx[0][plane * x.plane() + h * x.w + w] =
                    static_cast<float>(double(dy[0]) + dy[1] + double(dy[y.w]) + dy[y.w + 1]);
            }
}

void Session::add(const hb::LayerPass& p) {
    for (int64_t i = 0; i < p.y_dims.elements(); ++i) {
        double sum = 0;
        for (const float* x : p.x) sum += x[i];
        p.y[i] = static_cast<float>(sum);
    }
}

void Session::add_backward(const hb::LayerPass& p) {
    for (float* dx : p.dx)
        if (dx) std::copy(p.dy, p.dy + p.y_dims.elements(), dx);
}

void Session::mse_loss(const hb::LayerPass& p) {
    const int64_t count = p.x_dims[0].elements();
    double sum = 0;
    for (int64_t i = 0; i < count; ++i)
        sum += (double(p.x[0][i]) - p.target[i]) * (double(p.x[0][i]) - p.target[i]);
    p.y[0] = static_cast<float>(p.layer.loss_weight * sum / double(count));
}

void Session::mse_loss_backward(const hb::LayerPass& p) {
    if (!p.dx[0]) return;
    const int64_t count = p.x_dims[0].elements();
    const double scale = p.dy[0] * p.layer.loss_weight * 2 / double(count);
    for (int64_t i = 0; i < count; ++i)
        p.dx[0][i] = static_cast<float>(scale * (double(p.x[0][i]) - p.target[i]));
}

}  // namespace hb_loops
