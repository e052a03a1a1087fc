// The reference backend's matrix product: every kernel against a naive product, on strided views.
#include "gemm.hpp"
#include "hb/error.hpp"
#include "test_random.hpp"
#include "thread_pool.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace hb_reference {
namespace {

using harness::testing::Random;

// ------------------------------------------------------------------------------------------ GEMM

std::vector<double> naive_product(const Matrix<const double>& a, const Matrix<const double>& b) {
    std::vector<double> c(static_cast<size_t>(a.rows * b.cols), 0.0);
    for (int64_t i = 0; i < a.rows; ++i)
        for (int64_t j = 0; j < b.cols; ++j)
            for (int64_t k = 0; k < a.cols; ++k)
                c[i * b.cols + j] += a.data[a.row.offset(i) + a.col.offset(k)] *
                                     b.data[b.row.offset(k) + b.col.offset(j)];
    return c;
}

TEST(ReferenceGemm, MatchesNaiveProductOnStridedViews) {
    ThreadPool pool(2);
    Gemm<double> gemm(pool);
    Random rng(1);
    // Sizes straddle the register tile and cache blocks; K crosses a KC boundary.
    const int64_t m = 70, k = 300, n_images = 3, hw = 37;
    const std::vector<double> w = rng.vector(m * k);                // m x k, used transposed below
    const std::vector<double> x = rng.vector(n_images * k * hw);    // N x k x hw tensor
    const auto a = const_view(dense(w.data(), k, m)).transposed();  // m x k, column-major
    const auto b = const_view(channels_by_pixels(x.data(), n_images, k, hw));
    const std::vector<double> expected = naive_product(a, b);

    std::vector<double> y(static_cast<size_t>(n_images * m * hw), 5.0);
    gemm.multiply(channels_by_pixels(y.data(), n_images, m, hw), a, b, false);
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n_images * hw; ++j)
            ASSERT_NEAR(y[(j / hw) * m * hw + i * hw + j % hw], expected[i * n_images * hw + j],
                        1e-12);

    std::vector<double> acc(static_cast<size_t>(m * n_images * hw), 1.0);
    gemm.multiply(dense(acc.data(), m, n_images * hw), a, b, true);
    for (size_t i = 0; i < acc.size(); ++i) ASSERT_NEAR(acc[i], 1.0 + expected[i], 1e-12);
}

// Every register-tile kernel this CPU runs, in float, against the double-precision product.
TEST(ReferenceGemm, FloatKernelsMatchDoublePrecision) {
    std::vector<TileKernel> kernels = {TileKernel::portable};
    if (cpu_has_avx2_fma()) kernels.push_back(TileKernel::avx2_fma);
    Random rng(2);
    const int64_t m = 33, k = 700, n = 300;
    const std::vector<double> a = rng.vector(m * k), b = rng.vector(k * n);
    const std::vector<double> expected =
        naive_product(const_view(dense(a.data(), m, k)), const_view(dense(b.data(), k, n)));
    const std::vector<float> af(a.begin(), a.end()), bf(b.begin(), b.end());
    for (TileKernel kernel : kernels) {
        ThreadPool pool(2);
        Gemm<float> gemm(pool, kernel);
        std::vector<float> c(static_cast<size_t>(m * n));
        gemm.multiply(dense(c.data(), m, n), const_view(dense(af.data(), m, k)),
                      const_view(dense(bf.data(), k, n)), false);
        for (size_t i = 0; i < c.size(); ++i)
            ASSERT_NEAR(c[i], expected[i], 1e-4) << to_string(kernel) << " at " << i;
    }
}

TEST(ReferenceGemm, UnavailableKernelIsRejected) {
    ThreadPool pool(1);
    EXPECT_THROW(Gemm<double>(pool, TileKernel::avx2_fma), hb::Error);
}

TEST(ReferenceGemm, EmptyInnerDimensionGivesZeros) {
    ThreadPool pool(1);
    Gemm<double> gemm(pool);
    std::vector<double> c(6, 3.0);
    const double* none = nullptr;
    gemm.multiply(dense(c.data(), 2, 3), const_view(dense(none, 2, 0)),
                  const_view(dense(none, 0, 3)), false);
    for (double v : c) EXPECT_EQ(v, 0.0);
}

}  // namespace
}  // namespace hb_reference
