#include "kernels.hpp"

#include "hb/rmsprop.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace hb_onednn {
namespace {

// Elementwise loops are memory-bound: chunks of this many floats keep every thread streaming.
constexpr int64_t kChunk = 1 << 14;

int64_t chunks(int64_t count) {
    return (count + kChunk - 1) / kChunk;
}

}  // namespace

double squared_error(int64_t count, const float* y, const float* target, const uint8_t* mask,
                     int threads) {
    double total = 0;
#pragma omp parallel for num_threads(threads) reduction(+ : total) schedule(static)
    for (int64_t c = 0; c < chunks(count); ++c) {
        const int64_t begin = c * kChunk, end = std::min(count, begin + kChunk);
        double sum = 0;
        if (mask) {
#pragma omp simd reduction(+ : sum)
            for (int64_t i = begin; i < end; ++i) {
                const double d = mask[i] ? double(y[i]) - double(target[i]) : 0.0;
                sum += d * d;
            }
        } else {
#pragma omp simd reduction(+ : sum)
            for (int64_t i = begin; i < end; ++i) {
                const double d = double(y[i]) - double(target[i]);
                sum += d * d;
            }
        }
        total += sum;
    }
    return total;
}

void squared_error_gradient(int64_t count, const float* y, const float* target, const uint8_t* mask,
                            float scale, float* dy, bool accumulate, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t c = 0; c < chunks(count); ++c) {
        const int64_t begin = c * kChunk, end = std::min(count, begin + kChunk);
        if (accumulate) {
#pragma omp simd
            for (int64_t i = begin; i < end; ++i)
                dy[i] += mask && !mask[i] ? 0.0f : scale * (y[i] - target[i]);
        } else {
#pragma omp simd
            for (int64_t i = begin; i < end; ++i)
                dy[i] = mask && !mask[i] ? 0.0f : scale * (y[i] - target[i]);
        }
    }
}

void add_into(int64_t count, float* dst, const float* src, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t c = 0; c < chunks(count); ++c) {
        const int64_t begin = c * kChunk, end = std::min(count, begin + kChunk);
#pragma omp simd
        for (int64_t i = begin; i < end; ++i) dst[i] += src[i];
    }
}

void copy(int64_t count, float* dst, const float* src, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t c = 0; c < chunks(count); ++c) {
        const int64_t begin = c * kChunk, end = std::min(count, begin + kChunk);
        std::memcpy(dst + begin, src + begin, static_cast<size_t>(end - begin) * sizeof(float));
    }
}

void rmsprop_update(const hb_optimizer& settings, int64_t count, float* param, const float* grad,
                    float* square_average, float* momentum_buffer, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t c = 0; c < chunks(count); ++c) {
        const int64_t begin = c * kChunk, end = std::min(count, begin + kChunk);
        hb::rmsprop_update(settings, begin, end, param, grad, square_average, momentum_buffer);
    }
}

namespace {

// Sums of x and x^2 over one channel block: `plane` groups of B consecutive floats.
template <int B>
void block_sums(int64_t plane, const float* x, double* sum, double* squares) {
    double s[B] = {}, q[B] = {};
    for (int64_t i = 0; i < plane; ++i) {
        const float* p = x + i * B;
#pragma omp simd
        for (int k = 0; k < B; ++k) {
            const double v = p[k];
            s[k] += v;
            q[k] += v * v;
        }
    }
    for (int k = 0; k < B; ++k) {
        sum[k] += s[k];
        squares[k] += q[k];
    }
}

void plane_sums(int64_t plane, const float* x, double* sum, double* squares) {
    double s = 0, q = 0;
#pragma omp simd reduction(+ : s, q)
    for (int64_t i = 0; i < plane; ++i) {
        const double v = x[i];
        s += v;
        q += v * v;
    }
    *sum += s;
    *squares += q;
}

}  // namespace

void batch_statistics(int64_t batch, int64_t channels, int64_t plane, int block, const float* x,
                      float* mean, float* variance, int threads) {
    const int64_t blocks = (channels + block - 1) / block;
    const double count = static_cast<double>(batch * plane);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t cb = 0; cb < blocks; ++cb) {
        double sum[16] = {}, squares[16] = {};
        for (int64_t n = 0; n < batch; ++n) {
            const float* base = x + (n * blocks + cb) * plane * block;
            if (block == 8)
                block_sums<8>(plane, base, sum, squares);
            else if (block == 16)
                block_sums<16>(plane, base, sum, squares);
            else
                plane_sums(plane, base, sum, squares);
        }
        for (int k = 0; k < block && cb * block + k < channels; ++k) {
            // One pass in double: cancellation only matters for |mean| / std beyond 1e5.
            const double m = sum[k] / count;
            const double v = std::max(0.0, squares[k] / count - m * m);
            mean[cb * block + k] = static_cast<float>(m);
            variance[cb * block + k] = static_cast<float>(v);
        }
    }
}

void update_running_statistics(int64_t channels, const float* mean, const float* variance,
                               double momentum, double count, float* running_mean,
                               float* running_var) {
    const double unbias = count / (count - 1);
    for (int64_t c = 0; c < channels; ++c) {
        if (running_mean)
            running_mean[c] =
                static_cast<float>((1 - momentum) * running_mean[c] + momentum * mean[c]);
        if (running_var)
            running_var[c] = static_cast<float>((1 - momentum) * running_var[c] +
                                                momentum * double(variance[c]) * unbias);
    }
}

namespace {

constexpr int kMaxBlock = 16;

// Calls body(plane, output row) for every row of the smaller image, split over the threads.
template <class Body>
void for_each_row(int64_t planes, int64_t rows, int threads, Body body) {
#pragma omp parallel for num_threads(threads) schedule(static) collapse(2)
    for (int64_t p = 0; p < planes; ++p)
        for (int64_t r = 0; r < rows; ++r) body(p, r);
}

}  // namespace

void max_pool_2x2_forward(int64_t planes, int64_t h, int64_t w, int block, const float* x, float* y,
                          uint8_t* argmax, int threads) {
    const int64_t oh = h / 2, ow = w / 2, row = w * block;
    for_each_row(planes, oh, threads, [=](int64_t p, int64_t r) {
        const float* top = x + (p * h + 2 * r) * row;
        const float* bottom = top + row;
        float* out = y + (p * oh + r) * ow * block;
        uint8_t* from = argmax + (p * oh + r) * ow * block;
        for (int64_t j = 0; j < ow; ++j) {
            const float* a = top + 2 * j * block;
            const float* b = bottom + 2 * j * block;
            // The first maximum of each pair, then of the two pairs, in float selects only so
            // that it vectorises; still the first maximum in row-major order.
            float index[kMaxBlock];
#pragma omp simd
            for (int c = 0; c < block; ++c) {
                const float a0 = a[c], a1 = a[block + c], b0 = b[c], b1 = b[block + c];
                const float top_max = a1 > a0 ? a1 : a0, bottom_max = b1 > b0 ? b1 : b0;
                const float top_index = a1 > a0 ? 1.0f : 0.0f;
                const float bottom_index = b1 > b0 ? 3.0f : 2.0f;
                out[j * block + c] = bottom_max > top_max ? bottom_max : top_max;
                index[c] = bottom_max > top_max ? bottom_index : top_index;
            }
            for (int c = 0; c < block; ++c) from[j * block + c] = static_cast<uint8_t>(index[c]);
        }
    });
}

void max_pool_2x2_backward(int64_t planes, int64_t h, int64_t w, int block, const float* dy,
                           const uint8_t* argmax, float* dx, int threads) {
    const int64_t oh = h / 2, ow = w / 2, row = w * block;
    for_each_row(planes, oh, threads, [=](int64_t p, int64_t r) {
        float* top = dx + (p * h + 2 * r) * row;
        float* bottom = top + row;
        const float* g = dy + (p * oh + r) * ow * block;
        const uint8_t* from = argmax + (p * oh + r) * ow * block;
        for (int64_t j = 0; j < ow; ++j) {
            float* a = top + 2 * j * block;
            float* b = bottom + 2 * j * block;
#pragma omp simd
            for (int c = 0; c < block; ++c) {
                const float v = g[j * block + c];
                const uint8_t k = from[j * block + c];
                a[c] = k == 0 ? v : 0.0f;
                a[block + c] = k == 1 ? v : 0.0f;
                b[c] = k == 2 ? v : 0.0f;
                b[block + c] = k == 3 ? v : 0.0f;
            }
        }
    });
}

void upsample_2x_backward(int64_t planes, int64_t h, int64_t w, int block, const float* dy,
                          float* dx, int threads) {
    const int64_t oh = h / 2, ow = w / 2, row = w * block;
    for_each_row(planes, oh, threads, [=](int64_t p, int64_t r) {
        const float* top = dy + (p * h + 2 * r) * row;
        const float* bottom = top + row;
        float* out = dx + (p * oh + r) * ow * block;
        for (int64_t j = 0; j < ow; ++j) {
            const float* a = top + 2 * j * block;
            const float* b = bottom + 2 * j * block;
#pragma omp simd
            for (int c = 0; c < block; ++c)
                out[j * block + c] = (a[c] + a[block + c]) + (b[c] + b[block + c]);
        }
    });
}

}  // namespace hb_onednn
