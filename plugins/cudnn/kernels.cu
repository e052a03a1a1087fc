#include "kernel_launch.cuh"
#include "kernels.hpp"

#include <type_traits>

namespace cudnn_backend {
namespace kernels {
namespace {

constexpr int max_sources = 8;

template <class T>
struct Sources {
    const T* p[max_sources];
};
template <class T>
struct Destinations {
    T* p[max_sources];
    bool accumulate[max_sources];
};

// dx = g, or dx + g when accumulating.
template <class T>
__device__ inline void put_gradient(T& dx, float g, bool accumulate) {
    math::store(dx, accumulate ? math::load(dx) + g : g);
}

// float4 versions of the elementwise kernels for float storage; every kernel also has a generic
// version for either element type.
__global__ void relu_forward_kernel4(const float4* x, float4* y, int count4) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count4; i += gridDim.x * blockDim.x) {
        const float4 v = x[i];
        y[i] = make_float4(math::relu(v.x), math::relu(v.y), math::relu(v.z), math::relu(v.w));
    }
}
template <class T>
__global__ void relu_forward_kernel(const T* x, T* y, int count) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
        math::store(y[i], math::relu(math::load(x[i])));
}

__global__ void relu_backward_kernel4(const float4* y, const float4* dy, float4* dx, int count4,
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
template <class T>
__global__ void relu_backward_kernel(const T* y, const T* dy, T* dx, int count, bool accumulate) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
        put_gradient(dx[i], math::relu_gradient(math::load(y[i]), math::load(dy[i])), accumulate);
}

template <class T>
__global__ void add_forward_kernel(Sources<T> in, int sources, T* y, int count) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
        float sum = math::load(in.p[0][i]);
        for (int k = 1; k < sources; ++k) sum += math::load(in.p[k][i]);
        math::store(y[i], sum);
    }
}
__global__ void add_forward_kernel4(Sources<float> in, int sources, float4* y, int count4) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count4; i += gridDim.x * blockDim.x) {
        float4 sum = reinterpret_cast<const float4*>(in.p[0])[i];
        for (int k = 1; k < sources; ++k) {
            const float4 v = reinterpret_cast<const float4*>(in.p[k])[i];
            sum = make_float4(sum.x + v.x, sum.y + v.y, sum.z + v.z, sum.w + v.w);
        }
        y[i] = sum;
    }
}

template <class T>
__global__ void add_backward_kernel(const T* dy, Destinations<T> out, int outputs, int count) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
        const float g = math::load(dy[i]);
        for (int k = 0; k < outputs; ++k) put_gradient(out.p[k][i], g, out.accumulate[k]);
    }
}
__global__ void add_backward_kernel4(const float4* dy, Destinations<float> out, int outputs,
                                     int count4) {
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

template <class From, class To>
__global__ void convert_kernel(const From* source, To* destination, int count) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
        math::store(destination[i], math::load(source[i]));
}

bool aligned16(const void* p) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

}  // namespace

void relu_forward(Storage storage, const void* x, void* y, int64_t count, cudaStream_t stream) {
    const int n = checked_count(count);
    if (n == 0) return;
    if (storage == Storage::f32 && n % 4 == 0 && aligned16(x) && aligned16(y)) {
        relu_forward_kernel4<<<blocks_for(n / 4), threads, 0, stream>>>(
            static_cast<const float4*>(x), static_cast<float4*>(y), n / 4);
    } else {
        dispatch(storage, [&](auto zero) {
            using T = decltype(zero);
            relu_forward_kernel<<<blocks_for(n), threads, 0, stream>>>(static_cast<const T*>(x),
                                                                       static_cast<T*>(y), n);
        });
    }
    check_launch();
}

void relu_backward(Storage storage, const void* y, const void* dy, void* dx, int64_t count,
                   bool accumulate, cudaStream_t stream) {
    const int n = checked_count(count);
    if (n == 0) return;
    if (storage == Storage::f32 && n % 4 == 0 && aligned16(y) && aligned16(dy) && aligned16(dx)) {
        relu_backward_kernel4<<<blocks_for(n / 4), threads, 0, stream>>>(
            static_cast<const float4*>(y), static_cast<const float4*>(dy), static_cast<float4*>(dx),
            n / 4, accumulate);
    } else {
        dispatch(storage, [&](auto zero) {
            using T = decltype(zero);
            relu_backward_kernel<<<blocks_for(n), threads, 0, stream>>>(
                static_cast<const T*>(y), static_cast<const T*>(dy), static_cast<T*>(dx), n,
                accumulate);
        });
    }
    check_launch();
}

void add_forward(Storage storage, const std::vector<const void*>& inputs, void* y, int64_t count,
                 cudaStream_t stream) {
    const int n = checked_count(count);
    if (n == 0 || inputs.empty()) return;
    bool vector = storage == Storage::f32 && n % 4 == 0 && aligned16(y);
    for (const void* p : inputs) vector = vector && aligned16(p);
    dispatch(storage, [&](auto zero) {
        using T = decltype(zero);
        // Up to eight inputs per pass; later passes add to y, keeping the order of the sum.
        size_t next = 0;
        while (next < inputs.size()) {
            Sources<T> s{};
            int k = 0;
            if (next > 0) s.p[k++] = static_cast<const T*>(y);
            while (k < max_sources && next < inputs.size())
                s.p[k++] = static_cast<const T*>(inputs[next++]);
            if constexpr (std::is_same_v<T, float>) {
                if (vector) {
                    add_forward_kernel4<<<blocks_for(n / 4), threads, 0, stream>>>(
                        s, k, static_cast<float4*>(y), n / 4);
                    check_launch();
                    continue;
                }
            }
            add_forward_kernel<<<blocks_for(n), threads, 0, stream>>>(s, k, static_cast<T*>(y), n);
            check_launch();
        }
    });
}

void add_backward(Storage storage, const void* dy, const std::vector<void*>& dx,
                  const std::vector<bool>& accumulate, int64_t count, cudaStream_t stream) {
    const int n = checked_count(count);
    if (n == 0) return;
    bool vector = storage == Storage::f32 && n % 4 == 0 && aligned16(dy);
    for (void* p : dx) vector = vector && (!p || aligned16(p));
    dispatch(storage, [&](auto zero) {
        using T = decltype(zero);
        Destinations<T> d{};
        int k = 0;
        auto flush = [&] {
            if (k == 0) return;
            bool launched = false;
            if constexpr (std::is_same_v<T, float>) {
                if (vector) {
                    add_backward_kernel4<<<blocks_for(n / 4), threads, 0, stream>>>(
                        static_cast<const float4*>(dy), d, k, n / 4);
                    launched = true;
                }
            }
            if (!launched)
                add_backward_kernel<<<blocks_for(n), threads, 0, stream>>>(
                    static_cast<const T*>(dy), d, k, n);
            check_launch();
            k = 0;
        };
        for (size_t i = 0; i < dx.size(); ++i) {
            if (!dx[i]) continue;
            // The same gradient twice in one pass would race on its read-modify-write.
            for (int j = 0; j < k; ++j)
                if (d.p[j] == static_cast<T*>(dx[i])) flush();
            d.p[k] = static_cast<T*>(dx[i]);
            d.accumulate[k] = accumulate[i];
            if (++k == max_sources) flush();
        }
        flush();
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

void to_bf16(const float* source, void* destination, int64_t count, cudaStream_t stream) {
    const int n = checked_count(count);
    if (n == 0) return;
    convert_kernel<<<blocks_for(n), threads, 0, stream>>>(source,
                                                          static_cast<math::bf16*>(destination), n);
    check_launch();
}

void from_bf16(const void* source, float* destination, int64_t count, cudaStream_t stream) {
    const int n = checked_count(count);
    if (n == 0) return;
    convert_kernel<<<blocks_for(n), threads, 0, stream>>>(static_cast<const math::bf16*>(source),
                                                          destination, n);
    check_launch();
}

}  // namespace kernels
}  // namespace cudnn_backend
