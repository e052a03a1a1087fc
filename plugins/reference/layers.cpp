#include "layers.hpp"
#include "sum_terms.hpp"

#include <algorithm>
#include <cmath>

namespace hb_reference {
namespace {

constexpr int64_t elementwise_grain = 1 << 15;

}  // namespace

template <class T>
void batchnorm_forward(ThreadPool& pool, const Dims& d, const BatchNormParams& p, const T* x,
                       const T* gamma, const T* beta, T* y, T* running_mean, T* running_var,
                       BatchStatistics& stats, const RandomRounding& rounding, uint64_t site) {
    const int64_t plane = d.plane();
    const double count = static_cast<double>(d.n * plane);
    stats.mean.resize(static_cast<size_t>(d.c));
    stats.inv_std.resize(static_cast<size_t>(d.c));
    parallel_for(pool, d.c, 1, [&](int64_t c0, int64_t c1) {
        for (int64_t c = c0; c < c1; ++c) {
            double sum = 0;
            for (int64_t n = 0; n < d.n; ++n) {
                const T* in = x + (n * d.c + c) * plane;
                sum += sum_terms(plane, [&](int64_t i) { return double(in[i]); });
            }
            double mean = sum / count;
            double squares = 0;
            for (int64_t n = 0; n < d.n; ++n) {
                const T* in = x + (n * d.c + c) * plane;
                squares += sum_terms(plane, [&](int64_t i) {
                    const double dev = double(in[i]) - mean;
                    return dev * dev;
                });
            }
            double var = squares / count;
            round_statistics(rounding, site, count, mean, var);
            const double inv_std = 1.0 / std::sqrt(var + p.eps);
            stats.mean[c] = mean;
            stats.inv_std[c] = inv_std;

            const T mean_t = static_cast<T>(mean), inv_std_t = static_cast<T>(inv_std);
            const T g = gamma ? gamma[c] : T(1), b = beta ? beta[c] : T(0);
            for (int64_t n = 0; n < d.n; ++n) {
                const T* in = x + (n * d.c + c) * plane;
                T* out = y + (n * d.c + c) * plane;
                for (int64_t i = 0; i < plane; ++i) out[i] = (in[i] - mean_t) * inv_std_t * g + b;
            }
            if (running_mean)
                running_mean[c] =
                    static_cast<T>((1 - p.momentum) * running_mean[c] + p.momentum * mean);
            if (running_var)
                running_var[c] = static_cast<T>((1 - p.momentum) * running_var[c] +
                                                p.momentum * var * count / (count - 1));
        }
    });
}

template <class T>
void batchnorm_backward(ThreadPool& pool, const Dims& d, const T* x, const T* gamma,
                        const BatchStatistics& stats, const T* dy, T* dx, T* dgamma, T* dbeta) {
    const int64_t plane = d.plane();
    const double count = static_cast<double>(d.n * plane);
    parallel_for(pool, d.c, 1, [&](int64_t c0, int64_t c1) {
        for (int64_t c = c0; c < c1; ++c) {
            const double mean = stats.mean[c], inv_std = stats.inv_std[c];
            double sum_dy = 0, sum_dy_xhat = 0;
            for (int64_t n = 0; n < d.n; ++n) {
                const T* in = x + (n * d.c + c) * plane;
                const T* g = dy + (n * d.c + c) * plane;
                sum_dy += sum_terms(plane, [&](int64_t i) { return double(g[i]); });
                sum_dy_xhat += sum_terms(
                    plane, [&](int64_t i) { return double(g[i]) * (double(in[i]) - mean); });
            }
            sum_dy_xhat *= inv_std;
            if (dgamma) dgamma[c] += static_cast<T>(sum_dy_xhat);
            if (dbeta) dbeta[c] += static_cast<T>(sum_dy);
            if (!dx) continue;
            // dx = gamma * inv_std * (dy - mean(dy) - x_hat * mean(dy * x_hat))
            const double g = gamma ? double(gamma[c]) : 1.0;
            const T scale = static_cast<T>(g * inv_std);
            const T mean_dy = static_cast<T>(sum_dy / count);
            const T mean_dy_xhat = static_cast<T>(sum_dy_xhat / count);
            const T mean_t = static_cast<T>(mean), inv_std_t = static_cast<T>(inv_std);
            for (int64_t n = 0; n < d.n; ++n) {
                const T* in = x + (n * d.c + c) * plane;
                const T* g_out = dy + (n * d.c + c) * plane;
                T* g_in = dx + (n * d.c + c) * plane;
                for (int64_t i = 0; i < plane; ++i) {
                    const T x_hat = (in[i] - mean_t) * inv_std_t;
                    g_in[i] += scale * (g_out[i] - mean_dy - x_hat * mean_dy_xhat);
                }
            }
        }
    });
}

template <class T>
void relu_forward(ThreadPool& pool, int64_t count, const T* x, T* y) {
    parallel_for(pool, count, elementwise_grain, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) y[i] = x[i] > T(0) ? x[i] : T(0);
    });
}

template <class T>
void relu_backward(ThreadPool& pool, int64_t count, const T* x, const T* dy, T* dx) {
    parallel_for(pool, count, elementwise_grain, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) dx[i] += x[i] > T(0) ? dy[i] : T(0);
    });
}

template <class T>
void maxpool2d_forward(ThreadPool& pool, const Dims& d, const T* x, T* y) {
    const int64_t out_h = d.h / 2, out_w = d.w / 2;
    parallel_for(pool, d.n * d.c, 1, [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p) {
            const T* in = x + p * d.plane();
            T* out = y + p * out_h * out_w;
            for (int64_t oh = 0; oh < out_h; ++oh) {
                for (int64_t ow = 0; ow < out_w; ++ow) {
                    const T* top = in + 2 * oh * d.w + 2 * ow;
                    const T* bottom = top + d.w;
                    T m = top[0];
                    if (top[1] > m) m = top[1];
                    if (bottom[0] > m) m = bottom[0];
                    if (bottom[1] > m) m = bottom[1];
                    out[oh * out_w + ow] = m;
                }
            }
        }
    });
}

template <class T>
void maxpool2d_backward(ThreadPool& pool, const Dims& d, const T* x, const T* dy, T* dx) {
    const int64_t out_h = d.h / 2, out_w = d.w / 2;
    parallel_for(pool, d.n * d.c, 1, [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p) {
            const T* in = x + p * d.plane();
            const T* g_out = dy + p * out_h * out_w;
            T* g_in = dx + p * d.plane();
            for (int64_t oh = 0; oh < out_h; ++oh) {
                for (int64_t ow = 0; ow < out_w; ++ow) {
                    const int64_t window[4] = {2 * oh * d.w + 2 * ow, 2 * oh * d.w + 2 * ow + 1,
                                               (2 * oh + 1) * d.w + 2 * ow,
                                               (2 * oh + 1) * d.w + 2 * ow + 1};
                    int64_t arg = window[0];
                    for (int64_t k = 1; k < 4; ++k)
                        if (in[window[k]] > in[arg]) arg = window[k];
                    g_in[arg] += g_out[oh * out_w + ow];
                }
            }
        }
    });
}

template <class T>
void upsample_forward(ThreadPool& pool, const Dims& d, const T* x, T* y) {
    const int64_t out_w = 2 * d.w;
    parallel_for(pool, d.n * d.c, 1, [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p) {
            const T* in = x + p * d.plane();
            T* out = y + p * 4 * d.plane();
            for (int64_t i = 0; i < d.h; ++i) {
                T* top = out + 2 * i * out_w;
                T* bottom = top + out_w;
                for (int64_t j = 0; j < d.w; ++j) {
                    const T v = in[i * d.w + j];
                    top[2 * j] = top[2 * j + 1] = bottom[2 * j] = bottom[2 * j + 1] = v;
                }
            }
        }
    });
}

template <class T>
void upsample_backward(ThreadPool& pool, const Dims& d, const T* dy, T* dx) {
    const int64_t out_w = 2 * d.w;
    parallel_for(pool, d.n * d.c, 1, [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p) {
            const T* g_out = dy + p * 4 * d.plane();
            T* g_in = dx + p * d.plane();
            for (int64_t i = 0; i < d.h; ++i) {
                const T* top = g_out + 2 * i * out_w;
                const T* bottom = top + out_w;
                for (int64_t j = 0; j < d.w; ++j)
                    g_in[i * d.w + j] +=
                        top[2 * j] + top[2 * j + 1] + bottom[2 * j] + bottom[2 * j + 1];
            }
        }
    });
}

template <class T>
void add_forward(ThreadPool& pool, int64_t count, const std::vector<const T*>& inputs, T* y) {
    parallel_for(pool, count, elementwise_grain, [&](int64_t i0, int64_t i1) {
        std::copy(inputs[0] + i0, inputs[0] + i1, y + i0);
        for (size_t k = 1; k < inputs.size(); ++k) {
            const T* in = inputs[k];
            for (int64_t i = i0; i < i1; ++i) y[i] += in[i];
        }
    });
}

template <class T>
void add_backward(ThreadPool& pool, int64_t count, const T* dy, const std::vector<T*>& dinputs) {
    parallel_for(pool, count, elementwise_grain, [&](int64_t i0, int64_t i1) {
        for (T* g_in : dinputs) {
            if (!g_in) continue;
            for (int64_t i = i0; i < i1; ++i) g_in[i] += dy[i];
        }
    });
}

template <class T>
double mse_loss_forward(int64_t count, const T* y, const T* target, double weight) {
    const double sum = sum_terms(count, [&](int64_t i) {
        const double diff = double(y[i]) - double(target[i]);
        return diff * diff;
    });
    return weight * sum / static_cast<double>(count);
}

template <class T>
void mse_loss_backward(ThreadPool& pool, int64_t count, const T* y, const T* target, double weight,
                       T* dy) {
    const T scale = static_cast<T>(2 * weight / static_cast<double>(count));
    parallel_for(pool, count, elementwise_grain, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) dy[i] += scale * (y[i] - target[i]);
    });
}

#define REFERENCE_INSTANTIATE_LAYERS(T)                                                            \
    template void batchnorm_forward<T>(ThreadPool&, const Dims&, const BatchNormParams&, const T*, \
                                       const T*, const T*, T*, T*, T*, BatchStatistics&,           \
                                       const RandomRounding&, uint64_t);                           \
    template void batchnorm_backward<T>(ThreadPool&, const Dims&, const T*, const T*,              \
                                        const BatchStatistics&, const T*, T*, T*, T*);             \
    template void relu_forward<T>(ThreadPool&, int64_t, const T*, T*);                             \
    template void relu_backward<T>(ThreadPool&, int64_t, const T*, const T*, T*);                  \
    template void maxpool2d_forward<T>(ThreadPool&, const Dims&, const T*, T*);                    \
    template void maxpool2d_backward<T>(ThreadPool&, const Dims&, const T*, const T*, T*);         \
    template void upsample_forward<T>(ThreadPool&, const Dims&, const T*, T*);                     \
    template void upsample_backward<T>(ThreadPool&, const Dims&, const T*, T*);                    \
    template void add_forward<T>(ThreadPool&, int64_t, const std::vector<const T*>&, T*);          \
    template void add_backward<T>(ThreadPool&, int64_t, const T*, const std::vector<T*>&);         \
    template double mse_loss_forward<T>(int64_t, const T*, const T*, double);                      \
    template void mse_loss_backward<T>(ThreadPool&, int64_t, const T*, const T*, double, T*);

REFERENCE_INSTANTIATE_LAYERS(float)
REFERENCE_INSTANTIATE_LAYERS(double)

}  // namespace hb_reference
