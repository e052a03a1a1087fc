#include "channel_kernels.hpp"
#include "kernel_launch.cuh"

namespace hb_cudnn {
namespace kernels {
namespace {

// A reduction block is 32 x 8 threads. In NHWC its 32 lanes read 32 neighbouring channels of
// one position, in NCHW 32 neighbouring positions of one channel, so reads are coalesced in both.
constexpr int lanes = 32, rows = 8;
constexpr int64_t scratch_alignment = 256;

struct Geometry {
    int channels = 0, plane = 0, positions = 0;  // positions = N * H * W per channel
    int groups = 0, chunks = 0, chunk = 0;       // channel groups x position chunks = the grid
    bool nhwc = false;
};

Geometry geometry_of(const Shape& s, bool nhwc) {
    Geometry g;
    g.channels = checked_count(s.c);
    g.plane = checked_count(s.plane());
    g.positions = checked_count(s.n * s.plane());
    checked_count(s.elements());
    g.nhwc = nhwc;
    const int per_block = nhwc ? lanes : rows;
    g.groups = (g.channels + per_block - 1) / per_block;
    // About a thousand blocks when the tensor is large enough; at least 256 positions each.
    const int wanted = std::max(1, 1024 / std::max(g.groups, 1));
    g.chunks = std::max(1, std::min(wanted, g.positions / 256));
    g.chunk = (g.positions + g.chunks - 1) / g.chunks;
    return g;
}

int64_t partial_bytes(const Geometry& g) {
    return align_up(int64_t(g.chunks) * g.channels * 2 * int64_t(sizeof(double)),
                    scratch_alignment);
}

// The scratch: per chunk and channel two double partial sums, then up to three float
// coefficients per channel.
double* partials_of(void* scratch) {
    return static_cast<double*>(scratch);
}
float* coefficients_of(void* scratch, const Geometry& g) {
    return reinterpret_cast<float*>(static_cast<char*>(scratch) + partial_bytes(g));
}

__device__ inline int address(const Geometry& g, int c, int position) {
    if (g.nhwc) return position * g.channels + c;
    const int n = position / g.plane;
    return (n * g.channels + c) * g.plane + position % g.plane;
}

// Writes, per chunk of positions and channel, the sums of the two values `op` gives for each
// element of the channel.
template <class Op>
__global__ void channel_sums_kernel(Op op, Geometry g, double* partials) {
    __shared__ double first[rows][lanes], second[rows][lanes];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int c = g.nhwc ? blockIdx.x * lanes + tx : blockIdx.x * rows + ty;
    const int offset = g.nhwc ? ty : tx, step = g.nhwc ? rows : lanes;
    const int begin = blockIdx.y * g.chunk;
    const int end = min(begin + g.chunk, g.positions);
    double a = 0, b = 0;
    if (c < g.channels)
        for (int j = begin + offset; j < end; j += step) op(c, address(g, c, j), a, b);
    first[ty][tx] = a;
    second[ty][tx] = b;
    __syncthreads();
    const bool reducer = g.nhwc ? ty == 0 : tx == 0;
    if (!reducer || c >= g.channels) return;
    double sa = 0, sb = 0;
    if (g.nhwc) {
        for (int r = 0; r < rows; ++r) sa += first[r][tx], sb += second[r][tx];
    } else {
        for (int l = 0; l < lanes; ++l) sa += first[ty][l], sb += second[ty][l];
    }
    double* out = partials + (size_t(blockIdx.y) * g.channels + c) * 2;
    out[0] = sa;
    out[1] = sb;
}

template <class Op>
void channel_sums(const Op& op, const Geometry& g, void* scratch, cudaStream_t stream) {
    const dim3 block(lanes, rows), grid(unsigned(g.groups), unsigned(g.chunks));
    channel_sums_kernel<<<grid, block, 0, stream>>>(op, g, partials_of(scratch));
    check_launch();
}

// The chunk sums of channel c, added in chunk order.
__device__ inline void total(const double* partials, const Geometry& g, int c, double& a,
                             double& b) {
    a = 0;
    b = 0;
    for (int k = 0; k < g.chunks; ++k) {
        a += partials[(size_t(k) * g.channels + c) * 2];
        b += partials[(size_t(k) * g.channels + c) * 2 + 1];
    }
}

template <class T>
struct Values {
    const T* x;
    __device__ void operator()(int, int i, double& a, double& b) const {
        const double v = math::load(x[i]);
        a += v;
        b += v * v;
    }
};

template <class T>
struct OutputGradients {
    const T* x;
    const T* y;
    const T* dy;
    const float* saved;
    int channels;
    bool fused_relu;
    __device__ void operator()(int c, int i, double& a, double& b) const {
        const float g =
            fused_relu ? math::batchnorm_output_gradient(math::load(dy[i]), math::load(y[i]), true)
                       : math::load(dy[i]);
        const float x_hat = math::normalized(math::load(x[i]), saved[c], saved[channels + c]);
        a += g;
        b += double(g) * x_hat;
    }
};

template <class T>
struct Sum {
    const T* x;
    __device__ void operator()(int, int i, double& a, double&) const { a += math::load(x[i]); }
};

__global__ void batchnorm_forward_channels(const double* partials, Geometry g, BatchNormTensors bn,
                                           float* coefficients) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= g.channels) return;
    double sum, squares;
    total(partials, g, c, sum, squares);
    const math::BatchNormForward r =
        math::batchnorm_forward_channel(sum, squares, double(g.positions), bn.gamma[c], bn.beta[c],
                                        bn.running_mean[c], bn.running_var[c], bn.momentum, bn.eps);
    bn.saved[c] = r.mean;
    bn.saved[g.channels + c] = r.inverse_deviation;
    bn.running_mean[c] = r.running_mean;
    bn.running_var[c] = r.running_var;
    coefficients[c] = r.scale;
    coefficients[g.channels + c] = r.shift;
}

// The elementwise passes work on packs (kernel_launch.cuh). A pack lies in one channel (NCHW)
// or in consecutive channels of one position (NHWC): packable() is true for its width.
bool packable(const Geometry& g, int width) {
    return g.nhwc ? g.channels % width == 0 : g.plane % width == 0;
}
// The channel of the first element of pack i; element k's is that + k in NHWC, the same in NCHW.
__device__ inline int first_channel(int i, int width, const Geometry& g) {
    return channel_of(i * width, g.channels, g.plane, g.nhwc);
}

template <class P>
__global__ void batchnorm_forward_elements(const P* x, P* y, int packs, Geometry g,
                                           const float* coefficients, bool fused_relu) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < packs; i += gridDim.x * blockDim.x) {
        const int c0 = first_channel(i, P::width, g);
        const P a = x[i];
        P r;
        for (int k = 0; k < P::width; ++k) {
            const int c = g.nhwc ? c0 + k : c0;
            math::store(r.v[k],
                        math::batchnorm_forward_element(math::load(a.v[k]), coefficients[c],
                                                        coefficients[g.channels + c], fused_relu));
        }
        y[i] = r;
    }
}

__global__ void batchnorm_backward_channels(const double* partials, Geometry g, BatchNormTensors bn,
                                            float* dgamma, float* dbeta, float* coefficients) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= g.channels) return;
    double sum_g, sum_g_x_hat;
    total(partials, g, c, sum_g, sum_g_x_hat);
    const math::BatchNormBackward r = math::batchnorm_backward_channel(
        sum_g, sum_g_x_hat, double(g.positions), bn.gamma[c], bn.saved[g.channels + c]);
    dgamma[c] = r.dgamma;
    dbeta[c] = r.dbeta;
    coefficients[c] = r.input_scale;
    coefficients[g.channels + c] = r.mean_g;
    coefficients[2 * g.channels + c] = r.mean_g_x_hat;
}

// `y` is read only for the fused ReLU's mask.
template <class P>
__global__ void batchnorm_backward_elements(const P* x, const P* y, const P* dy, P* dx, int packs,
                                            Geometry g, const float* saved,
                                            const float* coefficients, bool fused_relu,
                                            bool accumulate) {
    const int C = g.channels;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < packs; i += gridDim.x * blockDim.x) {
        const int c0 = first_channel(i, P::width, g);
        const P xa = x[i], ga = dy[i];
        const P ya = fused_relu ? y[i] : P{};
        P r = accumulate ? dx[i] : P{};
        for (int k = 0; k < P::width; ++k) {
            const int c = g.nhwc ? c0 + k : c0;
            const float grad = math::batchnorm_output_gradient(math::load(ga.v[k]),
                                                               math::load(ya.v[k]), fused_relu);
            const float x_hat = math::normalized(math::load(xa.v[k]), saved[c], saved[C + c]);
            const float d = math::batchnorm_input_gradient(
                grad, x_hat, coefficients[c], coefficients[C + c], coefficients[2 * C + c]);
            math::store(r.v[k], accumulate ? math::load(r.v[k]) + d : d);
        }
        dx[i] = r;
    }
}

__global__ void bias_backward_channels(const double* partials, Geometry g, float* dbias) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= g.channels) return;
    double sum, unused;
    total(partials, g, c, sum, unused);
    dbias[c] = float(sum);
}

template <class P>
__global__ void bias_forward_elements(P* y, const float* bias, int packs, Geometry g) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < packs; i += gridDim.x * blockDim.x) {
        const int c0 = first_channel(i, P::width, g);
        P r = y[i];
        for (int k = 0; k < P::width; ++k)
            math::store(r.v[k], math::load(r.v[k]) + bias[g.nhwc ? c0 + k : c0]);
        y[i] = r;
    }
}

int channel_blocks(const Geometry& g) {
    return (g.channels + threads - 1) / threads;
}

}  // namespace

int64_t channel_scratch_bytes(const Shape& shape, bool nhwc) {
    const Geometry g = geometry_of(shape, nhwc);
    return partial_bytes(g) +
           align_up(3 * int64_t(g.channels) * int64_t(sizeof(float)), scratch_alignment);
}

void batchnorm_forward(Storage storage, const void* x, void* y, const Shape& shape, bool nhwc,
                       const BatchNormTensors& bn, void* scratch, cudaStream_t stream) {
    const Geometry g = geometry_of(shape, nhwc);
    const int count = checked_count(shape.elements());
    float* coefficients = coefficients_of(scratch, g);
    dispatch(storage, [&](auto zero) {
        using T = decltype(zero);
        channel_sums(Values<T>{static_cast<const T*>(x)}, g, scratch, stream);
        batchnorm_forward_channels<<<channel_blocks(g), threads, 0, stream>>>(partials_of(scratch),
                                                                              g, bn, coefficients);
        check_launch();
        with_pack_width<T>(count, {x, y}, packable(g, 16 / sizeof(T)), [&](auto width) {
            using P = Pack<T, decltype(width)::value>;
            batchnorm_forward_elements<<<blocks_for(count / P::width), threads, 0, stream>>>(
                static_cast<const P*>(x), static_cast<P*>(y), count / P::width, g, coefficients,
                bn.fused_relu);
        });
        check_launch();
    });
}

void batchnorm_backward(Storage storage, const void* x, const void* y, const void* dy, void* dx,
                        bool accumulate, float* dgamma, float* dbeta, const Shape& shape, bool nhwc,
                        const BatchNormTensors& bn, void* scratch, cudaStream_t stream) {
    const Geometry g = geometry_of(shape, nhwc);
    const int count = checked_count(shape.elements());
    float* coefficients = coefficients_of(scratch, g);
    dispatch(storage, [&](auto zero) {
        using T = decltype(zero);
        const OutputGradients<T> in{static_cast<const T*>(x),
                                    static_cast<const T*>(y),
                                    static_cast<const T*>(dy),
                                    bn.saved,
                                    g.channels,
                                    bn.fused_relu};
        channel_sums(in, g, scratch, stream);
        batchnorm_backward_channels<<<channel_blocks(g), threads, 0, stream>>>(
            partials_of(scratch), g, bn, dgamma, dbeta, coefficients);
        check_launch();
        if (!dx) return;
        with_pack_width<T>(count, {x, y, dy, dx}, packable(g, 16 / sizeof(T)), [&](auto width) {
            using P = Pack<T, decltype(width)::value>;
            batchnorm_backward_elements<<<blocks_for(count / P::width), threads, 0, stream>>>(
                static_cast<const P*>(x), static_cast<const P*>(y), static_cast<const P*>(dy),
                static_cast<P*>(dx), count / P::width, g, bn.saved, coefficients, bn.fused_relu,
                accumulate);
        });
        check_launch();
    });
}

void bias_forward(Storage storage, void* y, const float* bias, const Shape& shape, bool nhwc,
                  cudaStream_t stream) {
    const Geometry g = geometry_of(shape, nhwc);
    const int count = checked_count(shape.elements());
    dispatch(storage, [&](auto zero) {
        using T = decltype(zero);
        with_pack_width<T>(count, {y}, packable(g, 16 / sizeof(T)), [&](auto width) {
            using P = Pack<T, decltype(width)::value>;
            bias_forward_elements<<<blocks_for(count / P::width), threads, 0, stream>>>(
                static_cast<P*>(y), bias, count / P::width, g);
        });
    });
    check_launch();
}

void bias_backward(Storage storage, const void* dy, float* dbias, const Shape& shape, bool nhwc,
                   void* scratch, cudaStream_t stream) {
    const Geometry g = geometry_of(shape, nhwc);
    dispatch(storage, [&](auto zero) {
        using T = decltype(zero);
        channel_sums(Sum<T>{static_cast<const T*>(dy)}, g, scratch, stream);
    });
    bias_backward_channels<<<channel_blocks(g), threads, 0, stream>>>(partials_of(scratch), g,
                                                                      dbias);
    check_launch();
}

}  // namespace kernels
}  // namespace hb_cudnn
