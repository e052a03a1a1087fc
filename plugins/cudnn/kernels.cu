#include "check.hpp"
#include "hb/plugin.hpp"
#include "kernels.hpp"

#include <algorithm>
#include <climits>

namespace cudnn_backend {
namespace kernels {
namespace {

constexpr int threads = 256;
constexpr int max_sources = 8;

struct Sources {
    const float* p[max_sources];
};
struct Destinations {
    float* p[max_sources];
    bool accumulate[max_sources];
};

int blocks_for(int64_t work) {
    return static_cast<int>(std::min<int64_t>((work + threads - 1) / threads, 1 << 16));
}

int checked_count(int64_t count) {
    if (count < 0 || count > INT_MAX)
        throw hb::Error("a tensor of " + std::to_string(count) +
                        " elements is too large for the cudnn backend's kernels");
    return static_cast<int>(count);
}

void check_launch() {
    HB_CHECK(cudaGetLastError());
}

// Element (n, c, h, w) of `s` at flat index i in either layout.
struct Coordinates {
    int n, c, h, w;
};
__device__ inline Coordinates coordinates(int i, int C, int H, int W, bool nhwc) {
    Coordinates k;
    if (nhwc) {
        k.c = i % C;
        i /= C;
        k.w = i % W;
        i /= W;
        k.h = i % H;
        k.n = i / H;
    } else {
        k.w = i % W;
        i /= W;
        k.h = i % H;
        i /= H;
        k.c = i % C;
        k.n = i / C;
    }
    return k;
}
__device__ inline int flat(int n, int c, int h, int w, int C, int H, int W, bool nhwc) {
    return nhwc ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w;
}

__global__ void relu_forward_kernel(const float4* x, float4* y, int count4) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count4; i += gridDim.x * blockDim.x) {
        const float4 v = x[i];
        y[i] = make_float4(math::relu(v.x), math::relu(v.y), math::relu(v.z), math::relu(v.w));
    }
}
__global__ void relu_forward_scalar(const float* x, float* y, int count) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
        y[i] = math::relu(x[i]);
}

__global__ void relu_backward_kernel(const float4* y, const float4* dy, float4* dx, int count4,
                                     bool accumulate) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count4; i += gridDim.x * blockDim.x) {
        const float4 a = y[i], g = dy[i];
        float4 r = make_float4(math::relu_gradient(a.x, g.x), math::relu_gradient(a.y, g.y),
                               math::relu_gradient(a.z, g.z), math::relu_gradient(a.w, g.w));
        if (accumulate) {
            const float4 o = dx[i];
            r = make_float4(o.x + r.x, o.y + r.y, o.z + r.z, o.w + r.w);
        }
        dx[i] = r;
    }
}
__global__ void relu_backward_scalar(const float* y, const float* dy, float* dx, int count,
                                     bool accumulate) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
        const float r = math::relu_gradient(y[i], dy[i]);
        dx[i] = accumulate ? dx[i] + r : r;
    }
}

__global__ void add_forward_kernel(Sources in, int sources, float* y, int count) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
        float sum = in.p[0][i];
        for (int k = 1; k < sources; ++k) sum += in.p[k][i];
        y[i] = sum;
    }
}
__global__ void add_forward_kernel4(Sources in, int sources, float4* y, int count4) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count4; i += gridDim.x * blockDim.x) {
        float4 sum = reinterpret_cast<const float4*>(in.p[0])[i];
        for (int k = 1; k < sources; ++k) {
            const float4 v = reinterpret_cast<const float4*>(in.p[k])[i];
            sum = make_float4(sum.x + v.x, sum.y + v.y, sum.z + v.z, sum.w + v.w);
        }
        y[i] = sum;
    }
}

__global__ void add_backward_kernel(const float* dy, Destinations out, int outputs, int count) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
        const float g = dy[i];
        for (int k = 0; k < outputs; ++k) out.p[k][i] = out.accumulate[k] ? out.p[k][i] + g : g;
    }
}
__global__ void add_backward_kernel4(const float4* dy, Destinations out, int outputs, int count4) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count4; i += gridDim.x * blockDim.x) {
        const float4 g = dy[i];
        for (int k = 0; k < outputs; ++k) {
            float4* d = reinterpret_cast<float4*>(out.p[k]) + i;
            if (out.accumulate[k]) {
                const float4 o = *d;
                *d = make_float4(o.x + g.x, o.y + g.y, o.z + g.z, o.w + g.w);
            } else {
                *d = g;
            }
        }
    }
}

__global__ void maxpool_forward_kernel(const float* x, float* y, int N, int C, int H, int W,
                                       bool nhwc) {
    const int OH = H / 2, OW = W / 2, count = N * C * OH * OW;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
        const Coordinates o = coordinates(i, C, OH, OW, nhwc);
        const int a = flat(o.n, o.c, 2 * o.h, 2 * o.w, C, H, W, nhwc);
        const int right = nhwc ? C : 1, down = nhwc ? W * C : W;
        y[i] = math::window_max(x[a], x[a + right], x[a + down], x[a + down + right]);
    }
}

__global__ void maxpool_backward_kernel(const float* x, const float* dy, float* dx, int N, int C,
                                        int H, int W, bool nhwc, bool accumulate) {
    const int OH = H / 2, OW = W / 2, count = N * C * H * W;
    const int right = nhwc ? C : 1, down = nhwc ? W * C : W;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
        const Coordinates k = coordinates(i, C, H, W, nhwc);
        const int oh = k.h / 2, ow = k.w / 2;
        float g = 0.0f;
        if (oh < OH && ow < OW) {
            const int a = flat(k.n, k.c, 2 * oh, 2 * ow, C, H, W, nhwc);
            const int arg =
                math::first_max_position(x[a], x[a + right], x[a + down], x[a + down + right]);
            if (arg == (k.h & 1) * 2 + (k.w & 1)) g = dy[flat(k.n, k.c, oh, ow, C, OH, OW, nhwc)];
        }
        dx[i] = accumulate ? dx[i] + g : g;
    }
}

__global__ void upsample_forward_kernel(const float* x, float* y, int N, int C, int H, int W,
                                        bool nhwc) {
    const int count = N * C * 4 * H * W;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
        const Coordinates o = coordinates(i, C, 2 * H, 2 * W, nhwc);
        y[i] = x[flat(o.n, o.c, o.h / 2, o.w / 2, C, H, W, nhwc)];
    }
}

__global__ void upsample_backward_kernel(const float* dy, float* dx, int N, int C, int H, int W,
                                         bool nhwc, bool accumulate) {
    const int count = N * C * H * W, OH = 2 * H, OW = 2 * W;
    const int right = nhwc ? C : 1, down = nhwc ? OW * C : OW;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
        const Coordinates k = coordinates(i, C, H, W, nhwc);
        const int a = flat(k.n, k.c, 2 * k.h, 2 * k.w, C, OH, OW, nhwc);
        const float g =
            math::upsample_gradient(dy[a], dy[a + right], dy[a + down], dy[a + down + right]);
        dx[i] = accumulate ? dx[i] + g : g;
    }
}

constexpr int loss_threads = 1024;

__global__ void mse_loss_forward_kernel(const float* y, const float* t, int count, double weight,
                                        double* loss) {
    __shared__ double partial[loss_threads];
    double sum = 0;
    for (int i = threadIdx.x; i < count; i += loss_threads)
        sum += math::squared_difference(y[i], t[i]);
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int half = loss_threads / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) *loss = weight * partial[0] / static_cast<double>(count);
}

__global__ void mse_loss_backward_kernel(const float* y, const float* t, float* dy, int count,
                                         float scale, bool accumulate) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
        const float g = math::mse_gradient(y[i], t[i], scale);
        dy[i] = accumulate ? dy[i] + g : g;
    }
}

__global__ void rmsprop_kernel(float* param, const float* grad, float* square_average,
                               float* buffer, int count, math::RmsPropParams p) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
        float value = param[i], v = square_average[i];
        float b = buffer ? buffer[i] : 0.0f;
        math::rmsprop_element(p, value, grad[i], v, b);
        param[i] = value;
        square_average[i] = v;
        if (buffer) buffer[i] = b;
    }
}

__global__ void nchw_to_nhwc_kernel(const float* src, float* dst, int N, int C, int H, int W) {
    const int count = N * C * H * W;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
        const Coordinates k = coordinates(i, C, H, W, true);
        dst[i] = src[flat(k.n, k.c, k.h, k.w, C, H, W, false)];
    }
}

__global__ void fill_kernel(float* data, float value, int count) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
        data[i] = value;
}

bool aligned16(const void* p) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

}  // namespace

void relu_forward(const float* x, float* y, int64_t count, cudaStream_t stream) {
    const int n = checked_count(count);
    if (n == 0) return;
    if (n % 4 == 0 && aligned16(x) && aligned16(y))
        relu_forward_kernel<<<blocks_for(n / 4), threads, 0, stream>>>(
            reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n / 4);
    else
        relu_forward_scalar<<<blocks_for(n), threads, 0, stream>>>(x, y, n);
    check_launch();
}

void relu_backward(const float* y, const float* dy, float* dx, int64_t count, bool accumulate,
                   cudaStream_t stream) {
    const int n = checked_count(count);
    if (n == 0) return;
    if (n % 4 == 0 && aligned16(y) && aligned16(dy) && aligned16(dx))
        relu_backward_kernel<<<blocks_for(n / 4), threads, 0, stream>>>(
            reinterpret_cast<const float4*>(y), reinterpret_cast<const float4*>(dy),
            reinterpret_cast<float4*>(dx), n / 4, accumulate);
    else
        relu_backward_scalar<<<blocks_for(n), threads, 0, stream>>>(y, dy, dx, n, accumulate);
    check_launch();
}

void add_forward(const std::vector<const float*>& inputs, float* y, int64_t count,
                 cudaStream_t stream) {
    const int n = checked_count(count);
    if (n == 0 || inputs.empty()) return;
    // Up to eight inputs per pass; later passes add to y, keeping the order of the sum.
    size_t next = 0;
    bool vector = n % 4 == 0 && aligned16(y);
    for (const float* p : inputs) vector = vector && aligned16(p);
    while (next < inputs.size()) {
        Sources s{};
        int k = 0;
        if (next > 0) s.p[k++] = y;
        while (k < max_sources && next < inputs.size()) s.p[k++] = inputs[next++];
        if (vector)
            add_forward_kernel4<<<blocks_for(n / 4), threads, 0, stream>>>(
                s, k, reinterpret_cast<float4*>(y), n / 4);
        else
            add_forward_kernel<<<blocks_for(n), threads, 0, stream>>>(s, k, y, n);
        check_launch();
    }
}

void add_backward(const float* dy, const std::vector<float*>& dx,
                  const std::vector<bool>& accumulate, int64_t count, cudaStream_t stream) {
    const int n = checked_count(count);
    if (n == 0) return;
    bool vector = n % 4 == 0 && aligned16(dy);
    for (float* p : dx) vector = vector && (!p || aligned16(p));
    Destinations d{};
    int k = 0;
    auto flush = [&] {
        if (k == 0) return;
        if (vector)
            add_backward_kernel4<<<blocks_for(n / 4), threads, 0, stream>>>(
                reinterpret_cast<const float4*>(dy), d, k, n / 4);
        else
            add_backward_kernel<<<blocks_for(n), threads, 0, stream>>>(dy, d, k, n);
        check_launch();
        k = 0;
    };
    for (size_t i = 0; i < dx.size(); ++i) {
        if (!dx[i]) continue;
        // The same gradient twice in one pass would race on its read-modify-write.
        for (int j = 0; j < k; ++j)
            if (d.p[j] == dx[i]) flush();
        d.p[k] = dx[i];
        d.accumulate[k] = accumulate[i];
        if (++k == max_sources) flush();
    }
    flush();
}

void maxpool_forward(const float* x, float* y, const Shape& in, bool nhwc, cudaStream_t stream) {
    const int n = checked_count(in.n * in.c * (in.h / 2) * (in.w / 2));
    checked_count(in.elements());
    maxpool_forward_kernel<<<blocks_for(n), threads, 0, stream>>>(x, y, int(in.n), int(in.c),
                                                                  int(in.h), int(in.w), nhwc);
    check_launch();
}

void maxpool_backward(const float* x, const float* dy, float* dx, const Shape& in, bool nhwc,
                      bool accumulate, cudaStream_t stream) {
    const int n = checked_count(in.elements());
    maxpool_backward_kernel<<<blocks_for(n), threads, 0, stream>>>(
        x, dy, dx, int(in.n), int(in.c), int(in.h), int(in.w), nhwc, accumulate);
    check_launch();
}

void upsample_forward(const float* x, float* y, const Shape& in, bool nhwc, cudaStream_t stream) {
    const int n = checked_count(4 * in.elements());
    upsample_forward_kernel<<<blocks_for(n), threads, 0, stream>>>(x, y, int(in.n), int(in.c),
                                                                   int(in.h), int(in.w), nhwc);
    check_launch();
}

void upsample_backward(const float* dy, float* dx, const Shape& in, bool nhwc, bool accumulate,
                       cudaStream_t stream) {
    const int n = checked_count(in.elements());
    checked_count(4 * in.elements());
    upsample_backward_kernel<<<blocks_for(n), threads, 0, stream>>>(
        dy, dx, int(in.n), int(in.c), int(in.h), int(in.w), nhwc, accumulate);
    check_launch();
}

void mse_loss_forward(const float* y, const float* target, int64_t count, double weight,
                      double* loss, cudaStream_t stream) {
    const int n = checked_count(count);
    mse_loss_forward_kernel<<<1, loss_threads, 0, stream>>>(y, target, n, weight, loss);
    check_launch();
}

void mse_loss_backward(const float* y, const float* target, float* dy, int64_t count, double weight,
                       bool accumulate, cudaStream_t stream) {
    const int n = checked_count(count);
    mse_loss_backward_kernel<<<blocks_for(n), threads, 0, stream>>>(
        y, target, dy, n, math::mse_gradient_scale(weight, double(n)), accumulate);
    check_launch();
}

void rmsprop(float* param, const float* grad, float* square_average, float* buffer, int64_t count,
             const math::RmsPropParams& params, cudaStream_t stream) {
    const int n = checked_count(count);
    if (n == 0) return;
    rmsprop_kernel<<<blocks_for(n), threads, 0, stream>>>(param, grad, square_average, buffer, n,
                                                          params);
    check_launch();
}

void nchw_to_nhwc(const float* source, float* destination, const Shape& s, cudaStream_t stream) {
    const int n = checked_count(s.elements());
    nchw_to_nhwc_kernel<<<blocks_for(n), threads, 0, stream>>>(source, destination, int(s.n),
                                                               int(s.c), int(s.h), int(s.w));
    check_launch();
}

void fill(float* data, float value, int64_t count, cudaStream_t stream) {
    const int n = checked_count(count);
    if (n == 0) return;
    fill_kernel<<<blocks_for(n), threads, 0, stream>>>(data, value, n);
    check_launch();
}

}  // namespace kernels
}  // namespace cudnn_backend
