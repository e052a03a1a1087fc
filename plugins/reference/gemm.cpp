#include "gemm.hpp"

#include "hb/plugin.hpp"

#include <algorithm>
#include <string>
#include <type_traits>

namespace hb_reference {
namespace {

// Offsets along one axis for the indices [first, first + count).
void axis_offsets(const Axis& axis, int64_t first, int64_t count, std::vector<int64_t>& out) {
    for (int64_t i = 0; i < count; ++i) out[i] = axis.offset(first + i);
}

bool consecutive(const int64_t* offsets, int64_t count) {
    for (int64_t i = 1; i < count; ++i)
        if (offsets[i] != offsets[0] + i) return false;
    return true;
}

constexpr int64_t max_panels = 64;  // per packed block: MC / MR and NC / NR at most

// Copies `lines` x depth elements of a matrix into panels of P lines, each panel stored k-major:
// packed[panel][k][p]; lines past the end are zero. For A the lines are its rows, for B its
// columns. The source is read in long runs along whichever direction is contiguous in memory, with
// plain copies where it is, so that many loads are in flight when the data comes from DRAM.
template <class T, int64_t P>
void pack_panels(const T* m, const int64_t* line_offsets, const int64_t* depth_offsets,
                 int64_t lines, int64_t depth, bool depth_contiguous, T* packed) {
    const int64_t panels = (lines + P - 1) / P;
    if (depth_contiguous) {
        const bool depth_run = consecutive(depth_offsets, depth);
        for (int64_t l = 0; l < lines; ++l) {
            const T* line = m + line_offsets[l];
            T* out = packed + (l / P) * depth * P + l % P;
            if (depth_run) {
                line += depth_offsets[0];
                for (int64_t k = 0; k < depth; ++k) out[k * P] = line[k];
            } else {
                for (int64_t k = 0; k < depth; ++k) out[k * P] = line[depth_offsets[k]];
            }
        }
    } else {
        bool full_run[max_panels];  // the panel's P lines lie next to each other
        for (int64_t q = 0; q < panels; ++q)
            full_run[q] = (q + 1) * P <= lines && consecutive(line_offsets + q * P, P);
        for (int64_t k = 0; k < depth; ++k) {
            const T* at = m + depth_offsets[k];
            for (int64_t q = 0; q < panels; ++q) {
                T* out = packed + q * depth * P + k * P;
                const int64_t* offsets = line_offsets + q * P;
                if (full_run[q]) {
                    const T* run = at + offsets[0];
                    for (int64_t p = 0; p < P; ++p) out[p] = run[p];
                } else {
                    for (int64_t p = 0; p < std::min(P, lines - q * P); ++p)
                        out[p] = at[offsets[p]];
                }
            }
        }
    }
    for (int64_t l = lines; l < panels * P; ++l)
        for (int64_t k = 0; k < depth; ++k) packed[(l / P) * depth * P + k * P + l % P] = T(0);
}

}  // namespace

bool cpu_has_avx2_fma() {
#if defined(HB_REFERENCE_AVX2)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
}

const char* to_string(TileKernel kernel) {
    return kernel == TileKernel::avx2_fma ? "avx2_fma" : "portable";
}

namespace {

template <class T>
auto select_tile_product(TileKernel kernel) -> void (*)(int64_t, const T*, const T*, T*) {
    if (kernel == TileKernel::portable) return tile_product<T>;
#if defined(HB_REFERENCE_AVX2)
    if constexpr (std::is_same_v<T, float>)
        if (cpu_has_avx2_fma()) return tile_product_avx2_fma;
#endif
    throw hb::Error(std::string("matrix product: the ") + to_string(kernel) +
                        " kernel is not available for " +
                        (std::is_same_v<T, float> ? "float" : "double") + " on this CPU",
                    HB_UNAVAILABLE);
}

}  // namespace

template <class T>
Gemm<T>::Gemm(ThreadPool& pool, TileKernel kernel)
    : pool_(pool),
      kernel_(kernel),
      tile_product_(select_tile_product<T>(kernel)),
      scratch_(static_cast<size_t>(pool.size())) {
    for (auto& s : scratch_) {
        s.packed_a.resize(MC * KC);
        s.packed_b.resize(KC * NC);
        s.a_rows.resize(MC);
        s.a_cols.resize(KC);
        s.b_rows.resize(KC);
        s.b_cols.resize(NC);
        s.c_rows.resize(MC);
        s.c_cols.resize(NC);
    }
}

template <class T>
uint64_t Gemm<T>::scratch_bytes() const {
    return scratch_.size() *
           ((MC * KC + KC * NC) * sizeof(T) + (MC + KC + KC + NC + MC + NC) * sizeof(int64_t));
}

template <class T>
void Gemm<T>::multiply(const Matrix<T>& c, const Matrix<const T>& a, const Matrix<const T>& b,
                       bool accumulate) {
    if (a.rows != c.rows || b.cols != c.cols || a.cols != b.rows)
        throw hb::Error("matrix product: shapes " + std::to_string(a.rows) + "x" +
                        std::to_string(a.cols) + " * " + std::to_string(b.rows) + "x" +
                        std::to_string(b.cols) + " -> " + std::to_string(c.rows) + "x" +
                        std::to_string(c.cols) + " do not match");
    // A task computes one column block of C for a run of row blocks, so that the packed block of
    // B, usually the large operand, is read from memory once for all of them. How C is split into
    // tasks does not change any result: each element is summed over k in the same order.
    constexpr int64_t target_tasks = 32;
    const int64_t row_blocks = (c.rows + MC - 1) / MC;
    const int64_t col_blocks = (c.cols + NC - 1) / NC;
    const int64_t row_groups = std::min(row_blocks, (target_tasks + col_blocks - 1) / col_blocks);
    const int64_t rows_per_group = (row_blocks + row_groups - 1) / row_groups * MC;
    pool_.run(col_blocks * row_groups, [&](int64_t task, int worker) {
        const int64_t first_row = (task % row_groups) * rows_per_group;
        const int64_t end_row = std::min(c.rows, first_row + rows_per_group);
        multiply_block(scratch_[worker], c, a, b, accumulate, first_row, end_row,
                       (task / row_groups) * NC);
    });
}

template <class T>
void Gemm<T>::multiply_block(Scratch& s, const Matrix<T>& c, const Matrix<const T>& a,
                             const Matrix<const T>& b, bool accumulate, int64_t first_row,
                             int64_t end_row, int64_t j0) {
    const int64_t cols = std::min(NC, c.cols - j0);
    axis_offsets(c.col, j0, cols, s.c_cols);
    axis_offsets(b.col, j0, cols, s.b_cols);
    if (a.cols == 0 && !accumulate) {
        for (int64_t i = first_row; i < end_row; ++i) {
            const int64_t row = c.row.offset(i);
            for (int64_t j = 0; j < cols; ++j) c.data[row + s.c_cols[j]] = T(0);
        }
        return;
    }
    for (int64_t k0 = 0; k0 < a.cols; k0 += KC) {
        const int64_t depth = std::min(KC, a.cols - k0);
        axis_offsets(b.row, k0, depth, s.b_rows);
        axis_offsets(a.col, k0, depth, s.a_cols);
        pack_panels<T, NR>(b.data, s.b_cols.data(), s.b_rows.data(), cols, depth,
                           b.row.stride < b.col.stride, s.packed_b.data());
        const bool overwrite = k0 == 0 && !accumulate;
        for (int64_t i0 = first_row; i0 < end_row; i0 += MC) {
            const int64_t rows = std::min(MC, end_row - i0);
            axis_offsets(a.row, i0, rows, s.a_rows);
            axis_offsets(c.row, i0, rows, s.c_rows);
            pack_panels<T, MR>(a.data, s.a_rows.data(), s.a_cols.data(), rows, depth,
                               a.col.stride < a.row.stride, s.packed_a.data());
            for (int64_t jr = 0; jr < cols; jr += NR) {
                const int64_t tile_cols = std::min(NR, cols - jr);
                for (int64_t ir = 0; ir < rows; ir += MR) {
                    const int64_t tile_rows = std::min(MR, rows - ir);
                    T acc[MR * NR];
                    tile_product_(depth, s.packed_a.data() + ir * depth,
                                  s.packed_b.data() + jr * depth, acc);
                    for (int64_t i = 0; i < tile_rows; ++i) {
                        T* out = c.data + s.c_rows[ir + i];
                        const int64_t* col_offsets = s.c_cols.data() + jr;
                        for (int64_t j = 0; j < tile_cols; ++j) {
                            T& dst = out[col_offsets[j]];
                            dst = overwrite ? acc[i * NR + j] : dst + acc[i * NR + j];
                        }
                    }
                }
            }
        }
    }
}

template class Gemm<float>;
template class Gemm<double>;

}  // namespace hb_reference
