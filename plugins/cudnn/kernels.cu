#include "kernel_launch.cuh"
#include "kernels.hpp"

namespace hb_cudnn {
namespace kernels {
namespace {

constexpr int max_sources = 8;

template <class P>
struct Sources {
    const P* p[max_sources];
};
template <class P>
struct Destinations {
    P* p[max_sources];
    bool accumulate[max_sources];
};

// dx = g, or dx + g when accumulating.
template <class T>
__device__ inline void put_gradient(T& dx, float g, bool accumulate) {
    math::store(dx, accumulate ? math::load(dx) + g : g);
}

// The elementwise kernels work on packs (kernel_launch.cuh): P is Pack<T, W>.
template <class P>
__global__ void relu_forward_kernel(const P* x, P* y, int packs) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < packs; i += gridDim.x * blockDim.x) {
        const P a = x[i];
        P r;
        for (int k = 0; k < P::width; ++k) math::store(r.v[k], math::relu(math::load(a.v[k])));
        y[i] = r;
    }
}

template <class P>
__global__ void relu_backward_kernel(const P* y, const P* dy, P* dx, int packs, bool accumulate) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < packs; i += gridDim.x * blockDim.x) {
        const P a = y[i], g = dy[i];
        P r = accumulate ? dx[i] : P{};
        for (int k = 0; k < P::width; ++k)
            put_gradient(r.v[k], math::relu_gradient(math::load(a.v[k]), math::load(g.v[k])),
                         accumulate);
        dx[i] = r;
    }
}

template <class P>
__global__ void add_forward_kernel(Sources<P> in, int sources, P* y, int packs) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < packs; i += gridDim.x * blockDim.x) {
        const P first = in.p[0][i];
        float sum[P::width];
        for (int k = 0; k < P::width; ++k) sum[k] = math::load(first.v[k]);
        for (int s = 1; s < sources; ++s) {
            const P v = in.p[s][i];
            for (int k = 0; k < P::width; ++k) sum[k] += math::load(v.v[k]);
        }
        P r;
        for (int k = 0; k < P::width; ++k) math::store(r.v[k], sum[k]);
        y[i] = r;
    }
}

template <class P>
__global__ void add_backward_kernel(const P* dy, Destinations<P> out, int outputs, int packs) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < packs; i += gridDim.x * blockDim.x) {
        const P g = dy[i];
        for (int d = 0; d < outputs; ++d) {
            if (!out.accumulate[d]) {
                out.p[d][i] = g;
                continue;
            }
            P r = out.p[d][i];
            for (int k = 0; k < P::width; ++k) put_gradient(r.v[k], math::load(g.v[k]), true);
            out.p[d][i] = r;
        }
    }
}

template <class T>
__global__ void maxpool_forward_kernel(const T* x, T* y, int N, int C, int H, int W, bool nhwc) {
    const int OH = H / 2, OW = W / 2, count = N * C * OH * OW;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
        const Coordinates o = coordinates(i, C, OH, OW, nhwc);
        const int a = flat(o.n, o.c, 2 * o.h, 2 * o.w, C, H, W, nhwc);
        const int right = nhwc ? C : 1, down = nhwc ? W * C : W;
        math::store(y[i],
                    math::window_max(math::load(x[a]), math::load(x[a + right]),
                                     math::load(x[a + down]), math::load(x[a + down + right])));
    }
}

template <class T>
__global__ void maxpool_backward_kernel(const T* x, const T* dy, T* dx, int N, int C, int H, int W,
                                        bool nhwc, bool accumulate) {
    const int OH = H / 2, OW = W / 2, count = N * C * H * W;
    const int right = nhwc ? C : 1, down = nhwc ? W * C : W;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
        const Coordinates k = coordinates(i, C, H, W, nhwc);
        const int oh = k.h / 2, ow = k.w / 2;
        float g = 0.0f;
        if (oh < OH && ow < OW) {
            const int a = flat(k.n, k.c, 2 * oh, 2 * ow, C, H, W, nhwc);
            const int arg =
                math::first_max_position(math::load(x[a]), math::load(x[a + right]),
                                         math::load(x[a + down]), math::load(x[a + down + right]));
            if (arg == (k.h & 1) * 2 + (k.w & 1))
                g = math::load(dy[flat(k.n, k.c, oh, ow, C, OH, OW, nhwc)]);
        }
        put_gradient(dx[i], g, accumulate);
    }
}

template <class T>
__global__ void upsample_forward_kernel(const T* x, T* y, int N, int C, int H, int W, bool nhwc) {
    const int count = N * C * 4 * H * W;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
        const Coordinates o = coordinates(i, C, 2 * H, 2 * W, nhwc);
        y[i] = x[flat(o.n, o.c, o.h / 2, o.w / 2, C, H, W, nhwc)];
    }
}

template <class T>
__global__ void upsample_backward_kernel(const T* dy, T* dx, int N, int C, int H, int W, bool nhwc,
                                         bool accumulate) {
    const int count = N * C * H * W, OH = 2 * H, OW = 2 * W;
    const int right = nhwc ? C : 1, down = nhwc ? OW * C : OW;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
        const Coordinates k = coordinates(i, C, H, W, nhwc);
        const int a = flat(k.n, k.c, 2 * k.h, 2 * k.w, C, OH, OW, nhwc);
        const float g =
            math::upsample_gradient(math::load(dy[a]), math::load(dy[a + right]),
                                    math::load(dy[a + down]), math::load(dy[a + down + right]));
        put_gradient(dx[i], g, accumulate);
    }
}

constexpr int loss_threads = 1024;

template <class T>
__global__ void mse_loss_forward_kernel(const T* y, const float* t, int count, double weight,
                                        double* loss) {
    __shared__ double partial[loss_threads];
    double sum = 0;
    for (int i = threadIdx.x; i < count; i += loss_threads)
        sum += math::squared_difference(math::load(y[i]), t[i]);
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int half = loss_threads / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) *loss = weight * partial[0] / static_cast<double>(count);
}

template <class T>
__global__ void mse_loss_backward_kernel(const T* y, const float* t, T* dy, int count, float scale,
                                         bool accumulate) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
        put_gradient(dy[i], math::mse_gradient(math::load(y[i]), t[i], scale), accumulate);
}

__global__ void rmsprop_kernel(float* param, const float* grad, float* square_average,
                               float* buffer, math::bf16* bf16_copy, int count,
                               math::RmsPropParams p) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
        float value = param[i], v = square_average[i];
        float b = buffer ? buffer[i] : 0.0f;
        math::rmsprop_element(p, value, grad[i], v, b);
        param[i] = value;
        square_average[i] = v;
        if (buffer) buffer[i] = b;
        if (bf16_copy) bf16_copy[i] = math::to_bf16(value);
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

// From and To are packs of the same width.
template <class From, class To>
__global__ void convert_kernel(const From* source, To* destination, int packs) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < packs; i += gridDim.x * blockDim.x) {
        const From a = source[i];
        To r;
        for (int k = 0; k < From::width; ++k) math::store(r.v[k], math::load(a.v[k]));
        destination[i] = r;
    }
}

// Packs of 8: 32 bytes of float, 16 of bf16.
template <class From, class To>
void convert(const void* source, void* destination, int64_t count, cudaStream_t stream) {
    const int n = checked_count(count);
    if (n == 0) return;
    const void* wide = std::is_same_v<From, float> ? source : destination;
    const bool aligned = reinterpret_cast<uintptr_t>(wide) % 32 == 0;
    with_pack_width<math::bf16>(n, {source, destination}, aligned, [&](auto width) {
        constexpr int W = decltype(width)::value;
        convert_kernel<<<blocks_for(n / W), threads, 0, stream>>>(
            static_cast<const Pack<From, W>*>(source), static_cast<Pack<To, W>*>(destination),
            n / W);
    });
    check_launch();
}

}  // namespace

void relu_forward(Storage storage, const void* x, void* y, int64_t count, cudaStream_t stream) {
    const int n = checked_count(count);
    if (n == 0) return;
    dispatch(storage, [&](auto zero) {
        using T = decltype(zero);
        with_pack_width<T>(n, {x, y}, true, [&](auto width) {
            using P = Pack<T, decltype(width)::value>;
            relu_forward_kernel<<<blocks_for(n / P::width), threads, 0, stream>>>(
                static_cast<const P*>(x), static_cast<P*>(y), n / P::width);
        });
    });
    check_launch();
}

void relu_backward(Storage storage, const void* y, const void* dy, void* dx, int64_t count,
                   bool accumulate, cudaStream_t stream) {
    const int n = checked_count(count);
    if (n == 0) return;
    dispatch(storage, [&](auto zero) {
        using T = decltype(zero);
        with_pack_width<T>(n, {y, dy, dx}, true, [&](auto width) {
            using P = Pack<T, decltype(width)::value>;
            relu_backward_kernel<<<blocks_for(n / P::width), threads, 0, stream>>>(
                static_cast<const P*>(y), static_cast<const P*>(dy), static_cast<P*>(dx),
                n / P::width, accumulate);
        });
    });
    check_launch();
}

void add_forward(Storage storage, const std::vector<const void*>& inputs, void* y, int64_t count,
                 cudaStream_t stream) {
    const int n = checked_count(count);
    if (n == 0 || inputs.empty()) return;
    bool aligned = aligned16(y);
    for (const void* p : inputs) aligned = aligned && aligned16(p);
    dispatch(storage, [&](auto zero) {
        using T = decltype(zero);
        with_pack_width<T>(n, {}, aligned, [&](auto width) {
            using P = Pack<T, decltype(width)::value>;
            // Up to eight inputs per pass; later passes add to y, keeping the order of the sum.
            size_t next = 0;
            while (next < inputs.size()) {
                Sources<P> s{};
                int k = 0;
                if (next > 0) s.p[k++] = static_cast<const P*>(y);
                while (k < max_sources && next < inputs.size())
                    s.p[k++] = static_cast<const P*>(inputs[next++]);
                add_forward_kernel<<<blocks_for(n / P::width), threads, 0, stream>>>(
                    s, k, static_cast<P*>(y), n / P::width);
                check_launch();
            }
        });
    });
}

void add_backward(Storage storage, const void* dy, const std::vector<void*>& dx,
                  const std::vector<bool>& accumulate, int64_t count, cudaStream_t stream) {
    const int n = checked_count(count);
    if (n == 0) return;
    bool aligned = aligned16(dy);
    for (void* p : dx) aligned = aligned && (!p || aligned16(p));
    dispatch(storage, [&](auto zero) {
        using T = decltype(zero);
        with_pack_width<T>(n, {}, aligned, [&](auto width) {
            using P = Pack<T, decltype(width)::value>;
            Destinations<P> d{};
            int k = 0;
            auto flush = [&] {
                if (k == 0) return;
                add_backward_kernel<<<blocks_for(n / P::width), threads, 0, stream>>>(
                    static_cast<const P*>(dy), d, k, n / P::width);
                check_launch();
                k = 0;
            };
            for (size_t i = 0; i < dx.size(); ++i) {
                if (!dx[i]) continue;
                // The same gradient twice in one pass would race on its read-modify-write.
                for (int j = 0; j < k; ++j)
                    if (d.p[j] == static_cast<P*>(dx[i])) flush();
                d.p[k] = static_cast<P*>(dx[i]);
                d.accumulate[k] = accumulate[i];
                if (++k == max_sources) flush();
            }
            flush();
        });
    });
}

void maxpool_forward(Storage storage, const void* x, void* y, const Shape& in, bool nhwc,
                     cudaStream_t stream) {
    const int n = checked_count(in.n * in.c * (in.h / 2) * (in.w / 2));
    checked_count(in.elements());
    dispatch(storage, [&](auto zero) {
        using T = decltype(zero);
        maxpool_forward_kernel<<<blocks_for(n), threads, 0, stream>>>(
            static_cast<const T*>(x), static_cast<T*>(y), int(in.n), int(in.c), int(in.h),
            int(in.w), nhwc);
    });
    check_launch();
}

void maxpool_backward(Storage storage, const void* x, const void* dy, void* dx, const Shape& in,
                      bool nhwc, bool accumulate, cudaStream_t stream) {
    const int n = checked_count(in.elements());
    dispatch(storage, [&](auto zero) {
        using T = decltype(zero);
        maxpool_backward_kernel<<<blocks_for(n), threads, 0, stream>>>(
            static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<T*>(dx), int(in.n),
            int(in.c), int(in.h), int(in.w), nhwc, accumulate);
    });
    check_launch();
}

void upsample_forward(Storage storage, const void* x, void* y, const Shape& in, bool nhwc,
                      cudaStream_t stream) {
    const int n = checked_count(4 * in.elements());
    dispatch(storage, [&](auto zero) {
        using T = decltype(zero);
        upsample_forward_kernel<<<blocks_for(n), threads, 0, stream>>>(
            static_cast<const T*>(x), static_cast<T*>(y), int(in.n), int(in.c), int(in.h),
            int(in.w), nhwc);
    });
    check_launch();
}

void upsample_backward(Storage storage, const void* dy, void* dx, const Shape& in, bool nhwc,
                       bool accumulate, cudaStream_t stream) {
    const int n = checked_count(in.elements());
    checked_count(4 * in.elements());
    dispatch(storage, [&](auto zero) {
        using T = decltype(zero);
        upsample_backward_kernel<<<blocks_for(n), threads, 0, stream>>>(
            static_cast<const T*>(dy), static_cast<T*>(dx), int(in.n), int(in.c), int(in.h),
            int(in.w), nhwc, accumulate);
    });
    check_launch();
}

void mse_loss_forward(Storage storage, const void* y, const float* target, int64_t count,
                      double weight, double* loss, cudaStream_t stream) {
    const int n = checked_count(count);
    dispatch(storage, [&](auto zero) {
        using T = decltype(zero);
        mse_loss_forward_kernel<<<1, loss_threads, 0, stream>>>(static_cast<const T*>(y), target, n,
                                                                weight, loss);
    });
    check_launch();
}

void mse_loss_backward(Storage storage, const void* y, const float* target, void* dy, int64_t count,
                       double weight, bool accumulate, cudaStream_t stream) {
    const int n = checked_count(count);
    const float scale = math::mse_gradient_scale(weight, double(n));
    dispatch(storage, [&](auto zero) {
        using T = decltype(zero);
        mse_loss_backward_kernel<<<blocks_for(n), threads, 0, stream>>>(
            static_cast<const T*>(y), target, static_cast<T*>(dy), n, scale, accumulate);
    });
    check_launch();
}

void rmsprop(float* param, const float* grad, float* square_average, float* buffer, void* bf16_copy,
             int64_t count, const math::RmsPropParams& params, cudaStream_t stream) {
    const int n = checked_count(count);
    if (n == 0) return;
    rmsprop_kernel<<<blocks_for(n), threads, 0, stream>>>(
        param, grad, square_average, buffer, static_cast<math::bf16*>(bf16_copy), n, params);
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

void to_bf16(const float* source, void* destination, int64_t count, cudaStream_t stream) {
    convert<float, math::bf16>(source, destination, count, stream);
}

void from_bf16(const void* source, float* destination, int64_t count, cudaStream_t stream) {
    convert<math::bf16, float>(source, destination, count, stream);
}

}  // namespace kernels
}  // namespace hb_cudnn
