// Matrix multiplication C = A B (or C += A B) on strided views, cache-blocked and multithreaded.
// Convolutions are expressed as such products over views of NCHW tensors (layers.cpp).
#pragma once

#include "thread_pool.hpp"
#include "tile_product.hpp"

#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

namespace hb_reference {

// How an index i along one matrix dimension maps to a memory offset:
// (i / block) * block_stride + (i % block) * stride. A plain dimension has a block at least as long
// as the dimension; the (image, pixel) dimension of an NCHW tensor seen as a C x (N*H*W) matrix has
// block = H*W, stride = 1, block_stride = C*H*W.
struct Axis {
    int64_t stride = 1;
    int64_t block = std::numeric_limits<int64_t>::max();
    int64_t block_stride = 0;

    int64_t offset(int64_t i) const { return (i / block) * block_stride + (i % block) * stride; }
};

template <class T>
struct Matrix {
    T* data = nullptr;
    int64_t rows = 0, cols = 0;
    Axis row, col;

    Matrix transposed() const { return {data, cols, rows, col, row}; }
};

template <class T>
Matrix<const T> const_view(const Matrix<T>& m) {
    return {m.data, m.rows, m.cols, m.row, m.col};
}

// A dense row-major matrix.
template <class T>
Matrix<T> dense(T* data, int64_t rows, int64_t cols) {
    return {data, rows, cols, Axis{cols}, Axis{1}};
}

// An N x C x H x W tensor seen as the C x (N*H*W) matrix whose columns run over images, then
// pixels.
template <class T>
Matrix<T> channels_by_pixels(T* data, int64_t n, int64_t c, int64_t hw) {
    return {data, c, n * hw, Axis{hw}, Axis{1, hw, c * hw}};
}

// How a register tile is computed: portable C++ (any CPU, float or double) or, for float on x86-64
// CPUs that have them, AVX2 fused multiply-adds. Results are deterministic for a given kernel.
enum class TileKernel { portable, avx2_fma };
const char* to_string(TileKernel kernel);
// avx2_fma for float where the CPU supports it, otherwise portable.
template <class T>
TileKernel fastest_tile_kernel() {
    return std::is_same_v<T, float> && cpu_has_avx2_fma() ? TileKernel::avx2_fma
                                                          : TileKernel::portable;
}

template <class T>
class Gemm {
public:
    // Register tile (MR x NR) and cache blocks (MC x KC of A, KC x NC of B).
    static constexpr int64_t MR = kTileRows, NR = kTileCols, MC = 64, KC = 256, NC = 256;
    static_assert(MC % MR == 0 && NC % NR == 0 && MC / MR <= 64 && NC / NR <= 64,
                  "cache blocks hold whole register tiles, at most 64 of them");

    // Throws hb::Error when `kernel` cannot run here.
    explicit Gemm(ThreadPool& pool, TileKernel kernel = fastest_tile_kernel<T>());
    TileKernel kernel() const { return kernel_; }

    // c = a * b, or c += a * b when `accumulate`. Each element of c is summed in the same order
    // whatever the number of threads: k in blocks of KC, in order.
    void multiply(const Matrix<T>& c, const Matrix<const T>& a, const Matrix<const T>& b,
                  bool accumulate);

    ThreadPool& pool() { return pool_; }
    uint64_t scratch_bytes() const;

private:
    struct Scratch {
        std::vector<T> packed_a, packed_b;
        std::vector<int64_t> a_rows, a_cols, b_rows, b_cols, c_rows, c_cols;
    };
    // Rows [first_row, end_row) of C by columns [j0, j0 + NC).
    void multiply_block(Scratch& s, const Matrix<T>& c, const Matrix<const T>& a,
                        const Matrix<const T>& b, bool accumulate, int64_t first_row,
                        int64_t end_row, int64_t j0);

    ThreadPool& pool_;
    TileKernel kernel_;
    void (*tile_product_)(int64_t depth, const T* a, const T* b, T* acc);
    std::vector<Scratch> scratch_;  // one per worker thread
};

extern template class Gemm<float>;
extern template class Gemm<double>;

}  // namespace hb_reference
