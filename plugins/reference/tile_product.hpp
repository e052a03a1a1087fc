// The innermost step of the matrix product: one register tile of C from packed panels of A and B.
#pragma once

#include <cstdint>

namespace hb_reference {

// The tile is kTileRows x kTileCols; panels are stored k-major: a[k * kTileRows + i] and
// b[k * kTileCols + j].
constexpr int64_t kTileRows = 4, kTileCols = 16;

// acc[i * kTileCols + j] = sum over k < depth of a[k * kTileRows + i] * b[k * kTileCols + j], in
// increasing k. Written as plain loops that the compiler unrolls and vectorises; the small local
// array stays in vector registers.
template <class T>
void tile_product(int64_t depth, const T* __restrict a, const T* __restrict b, T* __restrict acc) {
    T c[kTileRows][kTileCols] = {};
    for (int64_t k = 0; k < depth; ++k) {
#pragma GCC unroll 16
        for (int64_t i = 0; i < kTileRows; ++i) {
            const T ai = a[k * kTileRows + i];
#pragma GCC unroll 32
            for (int64_t j = 0; j < kTileCols; ++j) c[i][j] += ai * b[k * kTileCols + j];
        }
    }
    for (int64_t i = 0; i < kTileRows; ++i)
        for (int64_t j = 0; j < kTileCols; ++j) acc[i * kTileCols + j] = c[i][j];
}

// The same for float with AVX2 fused multiply-adds (x86-64 builds only; call it only when
// cpu_has_avx2_fma()). Rounding differs from tile_product: one rounding per multiply-add.
void tile_product_avx2_fma(int64_t depth, const float* a, const float* b, float* acc);
bool cpu_has_avx2_fma();

}  // namespace hb_reference
