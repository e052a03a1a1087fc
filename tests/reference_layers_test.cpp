// The reference backend's kernels: each layer kind forward against a direct computation and
// backward against central finite differences (in double), RMSProp against hand computation, and
// results independent of the thread count.
#include "gemm.hpp"
#include "hb/plugin.hpp"
#include "layers.hpp"
#include "test_random.hpp"
#include "thread_pool.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <ostream>
#include <vector>

namespace hb_reference {
namespace {

using harness::testing::Random;

double dot(const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
}

// Compares analytic[i] with the central difference of loss() in `x`, for every element.
void expect_gradient(const char* what, std::vector<double>& x, const std::vector<double>& analytic,
                     const std::function<double()>& loss, double h = 1e-6) {
    ASSERT_EQ(x.size(), analytic.size()) << what;
    for (size_t i = 0; i < x.size(); ++i) {
        const double saved = x[i];
        x[i] = saved + h;
        const double plus = loss();
        x[i] = saved - h;
        const double minus = loss();
        x[i] = saved;
        const double numeric = (plus - minus) / (2 * h);
        EXPECT_NEAR(analytic[i], numeric, 1e-7 + 1e-6 * std::fabs(numeric))
            << what << "[" << i << "]";
    }
}

// ----------------------------------------------------------------------------------- conv2d

struct ConvCase {
    const char* name;
    int64_t n, cin, h, w, cout, kernel, stride, padding;
    bool bias;
};
// How CTest and failure messages show a case (GoogleTest would print its bytes).
void PrintTo(const ConvCase& c, std::ostream* out) {
    *out << c.name;
}

ConvShape shape_of(const ConvCase& c) {
    const int64_t oh = conv_output_size(c.h, c.kernel, c.stride, c.padding);
    const int64_t ow = conv_output_size(c.w, c.kernel, c.stride, c.padding);
    return ConvShape{{c.n, c.cin, c.h, c.w}, {c.n, c.cout, oh, ow}, c.kernel, c.stride, c.padding};
}

std::vector<double> direct_convolution(const ConvShape& s, const std::vector<double>& x,
                                       const std::vector<double>& w, const double* bias) {
    std::vector<double> y(static_cast<size_t>(s.output.elements()));
    for (int64_t n = 0; n < s.output.n; ++n)
        for (int64_t o = 0; o < s.output.c; ++o)
            for (int64_t oh = 0; oh < s.output.h; ++oh)
                for (int64_t ow = 0; ow < s.output.w; ++ow) {
                    double sum = bias ? bias[o] : 0.0;
                    for (int64_t c = 0; c < s.input.c; ++c)
                        for (int64_t ki = 0; ki < s.kernel; ++ki)
                            for (int64_t kj = 0; kj < s.kernel; ++kj) {
                                const int64_t ih = oh * s.stride - s.padding + ki;
                                const int64_t iw = ow * s.stride - s.padding + kj;
                                if (ih < 0 || ih >= s.input.h || iw < 0 || iw >= s.input.w)
                                    continue;
                                sum += x[((n * s.input.c + c) * s.input.h + ih) * s.input.w + iw] *
                                       w[((o * s.input.c + c) * s.kernel + ki) * s.kernel + kj];
                            }
                    y[((n * s.output.c + o) * s.output.h + oh) * s.output.w + ow] = sum;
                }
    return y;
}

class ReferenceConv : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ReferenceConv, ForwardMatchesDirectLoopAndBackwardMatchesFiniteDifferences) {
    const ConvCase& c = GetParam();
    const ConvShape s = shape_of(c);
    ThreadPool pool(2);
    Gemm<double> gemm(pool);
    Random rng(7);
    std::vector<double> x = rng.vector(s.input.elements());
    std::vector<double> w = rng.vector(s.output.c * s.patch_size());
    std::vector<double> b = c.bias ? rng.vector(s.output.c) : std::vector<double>();
    const std::vector<double> r = rng.vector(s.output.elements());  // dLoss/dy
    std::vector<double> y(static_cast<size_t>(s.output.elements()));
    std::vector<double> workspace(static_cast<size_t>(s.workspace_elements()));
    const double* bias = c.bias ? b.data() : nullptr;

    conv2d_forward(gemm, s, x.data(), w.data(), bias, y.data(), workspace.data());
    const std::vector<double> expected = direct_convolution(s, x, w, bias);
    for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], expected[i], 1e-12) << i;

    std::vector<double> dx(x.size(), 0.0), dw(w.size(), 0.0), db(b.size(), 0.0);
    conv2d_backward(gemm, s, x.data(), w.data(), r.data(), dx.data(), dw.data(),
                    c.bias ? db.data() : nullptr, workspace.data());
    auto loss = [&] {
        conv2d_forward(gemm, s, x.data(), w.data(), c.bias ? b.data() : nullptr, y.data(),
                       workspace.data());
        return dot(y, r);
    };
    expect_gradient("dx", x, dx, loss);
    expect_gradient("dweight", w, dw, loss);
    if (c.bias) expect_gradient("dbias", b, db, loss);
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, ReferenceConv,
    ::testing::Values(ConvCase{"pointwise_no_bias", 2, 5, 4, 3, 6, 1, 1, 0, false},
                      ConvCase{"pointwise_bias", 2, 5, 4, 3, 6, 1, 1, 0, true},
                      ConvCase{"k3_pad1_bias", 2, 3, 5, 6, 4, 3, 1, 1, true},
                      ConvCase{"k3_pad1_no_bias", 1, 4, 6, 5, 3, 3, 1, 1, false},
                      ConvCase{"k7_stride2_pad3", 2, 3, 9, 8, 4, 7, 2, 3, true},
                      ConvCase{"k1_stride2", 2, 3, 5, 5, 2, 1, 2, 0, true}),
    [](const ::testing::TestParamInfo<ConvCase>& param) { return std::string(param.param.name); });

TEST(ReferenceConvThreads, ResultsDoNotDependOnTheThreadCount) {
    const ConvShape s = shape_of({"", 3, 40, 13, 11, 70, 3, 1, 1, true});
    Random rng(3);
    auto to_float = [](const std::vector<double>& v) {
        return std::vector<float>(v.begin(), v.end());
    };
    const std::vector<float> x = to_float(rng.vector(s.input.elements()));
    const std::vector<float> w = to_float(rng.vector(s.output.c * s.patch_size()));
    const std::vector<float> b = to_float(rng.vector(s.output.c));
    const std::vector<float> dy = to_float(rng.vector(s.output.elements()));
    auto run = [&](int threads) {
        ThreadPool pool(threads);
        Gemm<float> gemm(pool);
        std::vector<float> y(static_cast<size_t>(s.output.elements()));
        std::vector<float> workspace(static_cast<size_t>(s.workspace_elements()));
        std::vector<float> dx(x.size(), 0.f), dw(w.size(), 0.f), db(b.size(), 0.f);
        conv2d_forward(gemm, s, x.data(), w.data(), b.data(), y.data(), workspace.data());
        conv2d_backward(gemm, s, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(),
                        workspace.data());
        y.insert(y.end(), dx.begin(), dx.end());
        y.insert(y.end(), dw.begin(), dw.end());
        y.insert(y.end(), db.begin(), db.end());
        return y;
    };
    const std::vector<float> one = run(1);
    EXPECT_EQ(one, run(2));
    EXPECT_EQ(one, run(5));
}

// ---------------------------------------------------------------------------------- batchnorm

TEST(ReferenceBatchNorm, ForwardNormalisesWithBiasedVarianceAndUpdatesRunningStats) {
    ThreadPool pool(2);
    const Dims d{2, 3, 2, 3};
    Random rng(11);
    const std::vector<double> x = rng.vector(d.elements(), -2, 3);
    const std::vector<double> gamma = {1.5, -0.5, 2.0}, beta = {0.1, 0.2, -0.3};
    std::vector<double> running_mean = {0.5, -1.0, 0.0}, running_var = {2.0, 1.0, 0.5};
    const BatchNormParams p{0.1, 1e-5};
    std::vector<double> y(x.size());
    BatchStatistics stats;
    const std::vector<double> old_mean = running_mean, old_var = running_var;
    batchnorm_forward(pool, d, p, x.data(), gamma.data(), beta.data(), y.data(),
                      running_mean.data(), running_var.data(), stats);
    const double m = static_cast<double>(d.n * d.plane());
    for (int64_t c = 0; c < d.c; ++c) {
        double mean = 0, var = 0;
        for (int64_t n = 0; n < d.n; ++n)
            for (int64_t i = 0; i < d.plane(); ++i) mean += x[(n * d.c + c) * d.plane() + i];
        mean /= m;
        for (int64_t n = 0; n < d.n; ++n)
            for (int64_t i = 0; i < d.plane(); ++i) {
                const double dev = x[(n * d.c + c) * d.plane() + i] - mean;
                var += dev * dev;
            }
        var /= m;  // biased
        for (int64_t n = 0; n < d.n; ++n)
            for (int64_t i = 0; i < d.plane(); ++i) {
                const size_t at = static_cast<size_t>((n * d.c + c) * d.plane() + i);
                EXPECT_NEAR(y[at], gamma[c] * (x[at] - mean) / std::sqrt(var + 1e-5) + beta[c],
                            1e-12);
            }
        EXPECT_NEAR(running_mean[c], 0.9 * old_mean[c] + 0.1 * mean, 1e-14);
        EXPECT_NEAR(running_var[c], 0.9 * old_var[c] + 0.1 * var * m / (m - 1), 1e-14);  // unbiased
    }
}

TEST(ReferenceBatchNorm, BackwardMatchesFiniteDifferences) {
    ThreadPool pool(2);
    const Dims d{3, 4, 3, 2};
    Random rng(12);
    std::vector<double> x = rng.vector(d.elements(), -1, 2);
    std::vector<double> gamma = rng.vector(d.c, 0.5, 1.5), beta = rng.vector(d.c);
    const std::vector<double> r = rng.vector(d.elements());
    const BatchNormParams p{0.1, 1e-5};
    std::vector<double> y(x.size());
    BatchStatistics stats;
    auto loss = [&] {
        batchnorm_forward(pool, d, p, x.data(), gamma.data(), beta.data(), y.data(),
                          static_cast<double*>(nullptr), static_cast<double*>(nullptr), stats);
        return dot(y, r);
    };
    loss();
    std::vector<double> dx(x.size(), 0.0), dgamma(gamma.size(), 0.0), dbeta(beta.size(), 0.0);
    batchnorm_backward(pool, d, x.data(), gamma.data(), stats, r.data(), dx.data(), dgamma.data(),
                       dbeta.data());
    expect_gradient("dx", x, dx, loss);
    expect_gradient("dgamma", gamma, dgamma, loss);
    expect_gradient("dbeta", beta, dbeta, loss);
}

// Rounded randomly, a channel's statistics move once, by at most u and sqrt(n) u of their terms'
// scale: every value of the channel shares the move, and another seed moves them otherwise.
TEST(ReferenceBatchNorm, RandomRoundingMovesEachChannelsStatisticsOnceBySqrtNRoundings) {
    ThreadPool pool(2);
    const Dims d{2, 3, 16, 16};
    Random rng(14);
    std::vector<double> x = rng.vector(d.elements(), -1, 3);
    const BatchNormParams p{0.1, 1e-5};
    const double n = static_cast<double>(d.n * d.plane()), u = std::ldexp(1.0, -23);
    auto statistics = [&](uint64_t seed, std::vector<double>& y) {
        BatchStatistics stats;
        y.assign(x.size(), 0.0);
        std::vector<double> running_mean(3, 0.0), running_var(3, 0.0);
        batchnorm_forward(pool, d, p, x.data(), static_cast<const double*>(nullptr),
                          static_cast<const double*>(nullptr), y.data(), running_mean.data(),
                          running_var.data(), stats, RandomRounding{seed, 24}, 5);
        return stats;
    };
    std::vector<double> exact_y, y, other_y;
    const BatchStatistics exact = statistics(0, exact_y), moved = statistics(1, y),
                          other = statistics(2, other_y);
    for (size_t c = 0; c < 3; ++c) {
        const double var = 1 / (exact.inv_std[c] * exact.inv_std[c]) - p.eps;
        const double rms = std::sqrt(var + exact.mean[c] * exact.mean[c]);
        const double mean_move = moved.mean[c] - exact.mean[c];
        EXPECT_NE(mean_move, 0.0);
        EXPECT_LE(std::fabs(mean_move), (1 + std::sqrt(n)) * u * rms);
        EXPECT_NE(other.mean[c], moved.mean[c]);
        const double var_moved = 1 / (moved.inv_std[c] * moved.inv_std[c]) - p.eps;
        EXPECT_LE(std::fabs(var_moved - var), (1 + std::sqrt(n)) * u * var * (1 + 1e-6));
        // Each normalised value moves by the channel's shift, -mean_move * inv_std, plus its own
        // scaling: values equal in x stay equal, and the channel moves as one.
        for (int64_t b = 0; b < d.n; ++b)
            for (int64_t i = 0; i < d.plane(); ++i) {
                const size_t at = static_cast<size_t>((b * d.c + int64_t(c)) * d.plane() + i);
                const double expected = (x[at] - moved.mean[c]) * moved.inv_std[c];
                EXPECT_NEAR(y[at], expected, 1e-12);
            }
    }
}

// ---------------------------------------------------------------------------- relu, pool, ...

TEST(ReferenceRelu, ForwardAndBackward) {
    ThreadPool pool(2);
    Random rng(13);
    std::vector<double> x = rng.vector(50);
    for (auto& v : x)
        if (std::fabs(v) < 0.05) v = 0.3;  // finite differences need distance from the kink
    x[7] = 0.0;                            // the gradient at exactly zero is zero
    const std::vector<double> r = rng.vector(50);
    std::vector<double> y(x.size());
    relu_forward(pool, 50, x.data(), y.data());
    for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], x[i] > 0 ? x[i] : 0.0);
    std::vector<double> dx(x.size(), 0.0);
    relu_backward(pool, 50, x.data(), r.data(), dx.data());
    EXPECT_EQ(dx[7], 0.0);
    x[7] = 0.5;  // away from the kink for the finite differences
    dx.assign(x.size(), 0.0);
    relu_backward(pool, 50, x.data(), r.data(), dx.data());
    expect_gradient("dx", x, dx, [&] {
        relu_forward(pool, 50, x.data(), y.data());
        return dot(y, r);
    });
}

TEST(ReferenceMaxPool, ForwardAndBackward) {
    ThreadPool pool(2);
    const Dims d{2, 3, 4, 6};
    Random rng(14);
    std::vector<double> x = rng.vector(d.elements());
    const Dims out{2, 3, 2, 3};
    const std::vector<double> r = rng.vector(out.elements());
    std::vector<double> y(static_cast<size_t>(out.elements()));
    maxpool2d_forward(pool, d, x.data(), y.data());
    for (int64_t p = 0; p < d.n * d.c; ++p)
        for (int64_t i = 0; i < 2; ++i)
            for (int64_t j = 0; j < 3; ++j) {
                const double* in = x.data() + p * d.plane();
                const double m = std::max(
                    std::max(in[2 * i * 6 + 2 * j], in[2 * i * 6 + 2 * j + 1]),
                    std::max(in[(2 * i + 1) * 6 + 2 * j], in[(2 * i + 1) * 6 + 2 * j + 1]));
                EXPECT_EQ(y[p * 6 + i * 3 + j], m);
            }
    std::vector<double> dx(x.size(), 0.0);
    maxpool2d_backward(pool, d, x.data(), r.data(), dx.data());
    expect_gradient("dx", x, dx, [&] {
        maxpool2d_forward(pool, d, x.data(), y.data());
        return dot(y, r);
    });
}

TEST(ReferenceMaxPool, TiesSendTheGradientToTheFirstMaximumInRowMajorOrder) {
    ThreadPool pool(1);
    const Dims d{1, 1, 2, 4};
    // Window 0: [1 3 / 3 0] (max 3 at (0,1) and (1,0)); window 1: [5 5 / 5 5].
    const std::vector<double> x = {1, 3, 5, 5, 3, 0, 5, 5};
    const std::vector<double> dy = {10, 20};
    std::vector<double> y(2), dx(8, 0.0);
    maxpool2d_forward(pool, d, x.data(), y.data());
    EXPECT_EQ(y, (std::vector<double>{3, 5}));
    maxpool2d_backward(pool, d, x.data(), dy.data(), dx.data());
    EXPECT_EQ(dx, (std::vector<double>{0, 10, 20, 0, 0, 0, 0, 0}));
}

TEST(ReferenceUpsample, ForwardAndBackward) {
    ThreadPool pool(2);
    const Dims d{2, 2, 2, 3};
    Random rng(15);
    std::vector<double> x = rng.vector(d.elements());
    const Dims out{2, 2, 4, 6};
    const std::vector<double> r = rng.vector(out.elements());
    std::vector<double> y(static_cast<size_t>(out.elements()));
    upsample_forward(pool, d, x.data(), y.data());
    for (int64_t p = 0; p < d.n * d.c; ++p)
        for (int64_t i = 0; i < 4; ++i)
            for (int64_t j = 0; j < 6; ++j)
                EXPECT_EQ(y[p * 24 + i * 6 + j], x[p * 6 + (i / 2) * 3 + j / 2]);
    std::vector<double> dx(x.size(), 0.0);
    upsample_backward(pool, d, r.data(), dx.data());
    expect_gradient("dx", x, dx, [&] {
        upsample_forward(pool, d, x.data(), y.data());
        return dot(y, r);
    });
}

TEST(ReferenceAdd, ThreeInputsForwardAndBackward) {
    ThreadPool pool(2);
    Random rng(16);
    const int64_t n = 40;
    std::vector<double> a = rng.vector(n), b = rng.vector(n), c = rng.vector(n);
    const std::vector<double> r = rng.vector(n);
    std::vector<double> y(static_cast<size_t>(n));
    auto loss = [&] {
        add_forward<double>(pool, n, {a.data(), b.data(), c.data()}, y.data());
        return dot(y, r);
    };
    loss();
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(y[i], a[i] + b[i] + c[i]);
    std::vector<double> da(a.size(), 0.0), db(b.size(), 0.0), dc(c.size(), 0.0);
    add_backward<double>(pool, n, r.data(), {da.data(), db.data(), dc.data()});
    expect_gradient("da", a, da, loss);
    expect_gradient("db", b, db, loss);
    expect_gradient("dc", c, dc, loss);

    // One value feeding two inputs of the same add receives both gradients.
    std::vector<double> twice(a.size(), 0.0);
    add_backward<double>(pool, n, r.data(), {twice.data(), twice.data()});
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(twice[i], 2 * r[i]);
}

TEST(ReferenceMseLoss, ForwardAndBackward) {
    ThreadPool pool(2);
    Random rng(17);
    const int64_t n = 60;
    std::vector<double> y = rng.vector(n);
    const std::vector<double> t = rng.vector(n, 0, 1);
    const double weight = 0.5;
    double expected = 0;
    for (int64_t i = 0; i < n; ++i) expected += (y[i] - t[i]) * (y[i] - t[i]);
    expected = weight * expected / static_cast<double>(n);
    EXPECT_NEAR(mse_loss_forward(n, y.data(), t.data(), weight), expected, 1e-15);
    std::vector<double> dy(y.size(), 0.0);
    mse_loss_backward(pool, n, y.data(), t.data(), weight, dy.data());
    expect_gradient("dy", y, dy, [&] { return mse_loss_forward(n, y.data(), t.data(), weight); });
}

}  // namespace
}  // namespace hb_reference
