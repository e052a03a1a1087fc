// Compiled with -mavx2 -mfma; only called after cpu_has_avx2_fma() (gemm.cpp). Nothing else may
// live in this file: any inline function it instantiated could be shared with the other files and
// carry AVX2 instructions to CPUs without them.
#include "tile_product.hpp"

#include <immintrin.h>

namespace hb_reference {

void tile_product_avx2_fma(int64_t depth, const float* a, const float* b, float* acc) {
    static_assert(kTileRows == 4 && kTileCols == 16, "the kernel is written for 4 x 16 tiles");
    __m256 c[4][2];
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) c[i][0] = c[i][1] = _mm256_setzero_ps();
    for (int64_t k = 0; k < depth; ++k) {
        const __m256 b0 = _mm256_loadu_ps(b + k * 16);
        const __m256 b1 = _mm256_loadu_ps(b + k * 16 + 8);
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) {
            const __m256 ai = _mm256_broadcast_ss(a + k * 4 + i);
            c[i][0] = _mm256_fmadd_ps(ai, b0, c[i][0]);
            c[i][1] = _mm256_fmadd_ps(ai, b1, c[i][1]);
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
        _mm256_storeu_ps(acc + i * 16, c[i][0]);
        _mm256_storeu_ps(acc + i * 16 + 8, c[i][1]);
    }
}

}  // namespace hb_reference
