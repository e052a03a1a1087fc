// The arithmetic of the cuDNN backend's own kernels (kernel_math.hpp), on the CPU: the update,
// the loss, pooling, upsampling, bf16 rounding and batch norm against the reference backend.
#include "backend_comparison.hpp"
#include "hb/rmsprop.hpp"
#include "kernel_math.hpp"
#include "layers.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {

using namespace hb_cudnn;
using harness::testing::rmsprop;

TEST(CudnnKernelMath, RmsPropMatchesReference) {
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (int variant = 0; variant < 2; ++variant)
        for (float momentum : {0.0f, 0.9f})
            for (float decay : {0.0f, 1e-4f}) {
                hb_optimizer o = rmsprop();
                o.variant = variant ? HB_RMSPROP_TENSORFLOW : HB_RMSPROP_TORCH;
                o.momentum = momentum;
                o.weight_decay = decay;
                o.initial_square_average = variant ? 1.0f : 0.0f;
                const int n = 1000;
                std::vector<float> p(n), g(n);
                for (int i = 0; i < n; ++i) p[i] = u(rng), g[i] = u(rng);
                std::vector<float> mine = p;
                std::vector<float> theirs_v(n, o.initial_square_average), theirs_b(n, 0.0f);
                std::vector<float> v(n, o.initial_square_average), b(n, 0.0f);
                const math::RmsPropParams params = math::rmsprop_params(o);
                for (int step = 0; step < 3; ++step) {
                    hb::rmsprop_update(o, 0, n, p.data(), g.data(), theirs_v.data(),
                                       theirs_b.data());
                    for (int i = 0; i < n; ++i)
                        math::rmsprop_element(params, mine[i], g[i], v[i], b[i]);
                }
                for (int i = 0; i < n; ++i) {
                    ASSERT_EQ(mine[i], p[i]) << i;
                    ASSERT_EQ(v[i], theirs_v[i]) << i;
                }
            }
}

TEST(CudnnKernelMath, MseGradientMatchesReference) {
    hb_reference::ThreadPool pool(1);
    const int n = 257;
    std::vector<float> y(n), t(n), expected(n, 0.0f);
    for (int i = 0; i < n; ++i) y[i] = 0.01f * float(i % 17), t[i] = 0.02f * float(i % 5);
    hb_reference::mse_loss_backward(pool, n, y.data(), t.data(), 0.5, expected.data());
    const float scale = math::mse_gradient_scale(0.5, n);
    for (int i = 0; i < n; ++i) EXPECT_EQ(math::mse_gradient(y[i], t[i], scale), expected[i]);
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += math::squared_difference(y[i], t[i]);
    EXPECT_DOUBLE_EQ(0.5 * sum / n, hb_reference::mse_loss_forward(n, y.data(), t.data(), 0.5));
}

TEST(CudnnKernelMath, MaxPoolGradientGoesToFirstMaximum) {
    EXPECT_EQ(math::first_max_position(1, 1, 1, 1), 0);
    EXPECT_EQ(math::first_max_position(0, 2, 2, 1), 1);
    EXPECT_EQ(math::first_max_position(0, 1, 2, 2), 2);
    EXPECT_EQ(math::first_max_position(0, 1, 2, 3), 3);
    // Against the reference on data full of ties, including odd sizes.
    hb_reference::ThreadPool pool(1);
    const hb_reference::Dims d{2, 3, 7, 6};
    std::vector<float> x(size_t(d.elements())), dy(size_t(d.n * d.c * 3 * 3)), dx(x.size(), 0.0f);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float((i * 7) % 3);
    for (size_t i = 0; i < dy.size(); ++i) dy[i] = float(i + 1);
    hb_reference::maxpool2d_backward(pool, d, x.data(), dy.data(), dx.data());
    for (int64_t p = 0; p < d.n * d.c; ++p)
        for (int64_t h = 0; h < d.h; ++h)
            for (int64_t w = 0; w < d.w; ++w) {
                const int64_t oh = h / 2, ow = w / 2;
                float g = 0;
                if (oh < d.h / 2 && ow < d.w / 2) {
                    const float* a = x.data() + p * d.plane() + 2 * oh * d.w + 2 * ow;
                    if (math::first_max_position(a[0], a[1], a[d.w], a[d.w + 1]) ==
                        (h & 1) * 2 + (w & 1))
                        g = dy[size_t(p * 9 + oh * 3 + ow)];
                    EXPECT_EQ(math::window_max(a[0], a[1], a[d.w], a[d.w + 1]),
                              std::max({a[0], a[1], a[d.w], a[d.w + 1]}));
                }
                EXPECT_EQ(g, dx[size_t(p * d.plane() + h * d.w + w)]);
            }
}

TEST(CudnnKernelMath, UpsampleGradientSumsEachBlock) {
    hb_reference::ThreadPool pool(1);
    const hb_reference::Dims d{1, 2, 3, 4};
    std::vector<float> dy(size_t(4 * d.elements())), dx(size_t(d.elements()), 0.0f);
    for (size_t i = 0; i < dy.size(); ++i) dy[i] = 0.1f * float(i) + 1.0f / float(i + 3);
    hb_reference::upsample_backward(pool, d, dy.data(), dx.data());
    const int64_t ow = 2 * d.w;
    for (int64_t c = 0; c < d.c; ++c)
        for (int64_t h = 0; h < d.h; ++h)
            for (int64_t w = 0; w < d.w; ++w) {
                const float* top = dy.data() + c * 4 * d.plane() + 2 * h * ow + 2 * w;
                EXPECT_EQ(math::upsample_gradient(top[0], top[1], top[ow], top[ow + 1]),
                          dx[size_t(c * d.plane() + h * d.w + w)]);
            }
}

TEST(CudnnKernelMath, Relu) {
    EXPECT_EQ(math::relu(-1.0f), 0.0f);
    EXPECT_EQ(math::relu(2.5f), 2.5f);
    EXPECT_EQ(math::relu_gradient(0.0f, 3.0f), 0.0f);
    EXPECT_EQ(math::relu_gradient(0.5f, 3.0f), 3.0f);
}

TEST(CudnnKernelMath, Bf16RoundsToNearestEven) {
    auto bits = [](float x) { return math::to_bf16(x).bits; };
    EXPECT_EQ(bits(1.0f), 0x3f80);
    EXPECT_EQ(bits(-2.0f), 0xc000);
    EXPECT_EQ(bits(0.0f), 0x0000);
    EXPECT_EQ(bits(-0.0f), 0x8000);
    // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even neighbour, 1.
    EXPECT_EQ(bits(1.0f + 1.0f / 256), 0x3f80);
    // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: to the even one, 1 + 2^-6.
    EXPECT_EQ(bits(1.0f + 3.0f / 256), 0x3f82);
    EXPECT_EQ(bits(1.0f + 1.5f / 256), 0x3f81);  // above halfway rounds up
    EXPECT_EQ(bits(std::numeric_limits<float>::infinity()), 0x7f80);
    EXPECT_EQ(bits(std::numeric_limits<float>::max()), 0x7f80);  // overflows to infinity
    EXPECT_TRUE(std::isnan(math::from_bf16(math::to_bf16(std::nanf("")))));
    EXPECT_TRUE(std::isnan(math::from_bf16(math::bf16{0x7f81})));
    // A signalling NaN whose payload lies only in the low half stays a NaN, not infinity.
    float low_nan;
    const uint32_t low_nan_bits = 0x7f800001u;
    std::memcpy(&low_nan, &low_nan_bits, sizeof low_nan);
    EXPECT_TRUE(std::isnan(math::from_bf16(math::to_bf16(low_nan))));
    // Every bf16 value converts to float and back unchanged; relative error of rounding <= 2^-8.
    for (uint32_t b = 0; b < 0x10000u; ++b) {
        const float x = math::from_bf16(math::bf16{uint16_t(b)});
        if (std::isnan(x)) continue;
        ASSERT_EQ(math::to_bf16(x).bits, b);
    }
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(-100.0f, 100.0f);
    for (int i = 0; i < 10000; ++i) {
        const float x = u(rng);
        EXPECT_LE(std::fabs(math::from_bf16(math::to_bf16(x)) - x), std::ldexp(std::fabs(x), -8));
    }
    math::bf16 stored{};
    math::store(stored, 3.0f);
    EXPECT_EQ(math::load(stored), 3.0f);
}

// The backend's own batch norm (bf16 math), composed on the host from the per-channel and
// per-element functions its kernels use, against the reference backend in float32.
TEST(CudnnKernelMath, BatchNormMatchesReference) {
    hb_reference::ThreadPool pool(1);
    const hb_reference::Dims d{3, 4, 5, 6};
    const int64_t C = d.c, plane = d.plane(), count = d.n * plane;
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(size_t(d.elements())), dy(x.size()), gamma(static_cast<size_t>(C)),
        beta(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c)
        gamma[size_t(c)] = 0.5f + 0.25f * float(c), beta[size_t(c)] = 0.1f * float(c);
    // Channel means far from zero, as after a convolution with a bias.
    for (size_t i = 0; i < x.size(); ++i)
        x[i] = 3.0f * float((i / size_t(plane)) % static_cast<size_t>(C)) + normal(rng);
    for (float& g : dy) g = normal(rng);
    const hb_reference::BatchNormParams params{0.1, 1e-5};
    std::vector<float> expected_y(x.size()), rm(static_cast<size_t>(C), 0.0f),
        rv(static_cast<size_t>(C), 1.0f);
    hb_reference::BatchStatistics stats;
    hb_reference::batchnorm_forward(pool, d, params, x.data(), gamma.data(), beta.data(),
                                    expected_y.data(), rm.data(), rv.data(), stats);
    std::vector<float> expected_dx(x.size()), expected_dgamma(static_cast<size_t>(C)),
        expected_dbeta(static_cast<size_t>(C));
    hb_reference::batchnorm_backward(pool, d, x.data(), gamma.data(), stats, dy.data(),
                                     expected_dx.data(), expected_dgamma.data(),
                                     expected_dbeta.data());

    auto at = [&](int64_t n, int64_t c, int64_t i) { return size_t((n * C + c) * plane + i); };
    for (int64_t c = 0; c < C; ++c) {
        double sum = 0, squares = 0;
        for (int64_t n = 0; n < d.n; ++n)
            for (int64_t i = 0; i < plane; ++i) {
                const double v = x[at(n, c, i)];
                sum += v;
                squares += v * v;
            }
        const math::BatchNormForward f = math::batchnorm_forward_channel(
            sum, squares, double(count), gamma[size_t(c)], beta[size_t(c)], 0.0f, 1.0f,
            params.momentum, params.eps);
        EXPECT_NEAR(f.running_mean, rm[size_t(c)], 1e-6 * (1 + std::fabs(rm[size_t(c)])));
        EXPECT_NEAR(f.running_var, rv[size_t(c)], 1e-5 * rv[size_t(c)]);
        double sum_g = 0, sum_g_x_hat = 0;
        for (int64_t n = 0; n < d.n; ++n)
            for (int64_t i = 0; i < plane; ++i) {
                const size_t k = at(n, c, i);
                EXPECT_NEAR(math::batchnorm_forward_element(x[k], f.scale, f.shift, false),
                            expected_y[k], 2e-5 * (1 + std::fabs(expected_y[k])));
                const float g = math::batchnorm_output_gradient(dy[k], 0.0f, false);
                sum_g += g;
                sum_g_x_hat += double(g) * math::normalized(x[k], f.mean, f.inverse_deviation);
            }
        const math::BatchNormBackward b = math::batchnorm_backward_channel(
            sum_g, sum_g_x_hat, double(count), gamma[size_t(c)], f.inverse_deviation);
        EXPECT_NEAR(b.dgamma, expected_dgamma[size_t(c)], 1e-4 * (1 + std::fabs(b.dgamma)));
        EXPECT_NEAR(b.dbeta, expected_dbeta[size_t(c)], 1e-4 * (1 + std::fabs(b.dbeta)));
        for (int64_t n = 0; n < d.n; ++n)
            for (int64_t i = 0; i < plane; ++i) {
                const size_t k = at(n, c, i);
                const float dx = math::batchnorm_input_gradient(
                    dy[k], math::normalized(x[k], f.mean, f.inverse_deviation), b.input_scale,
                    b.mean_g, b.mean_g_x_hat);
                EXPECT_NEAR(dx, expected_dx[k], 1e-4 * (1 + std::fabs(expected_dx[k])));
            }
    }
}

TEST(CudnnKernelMath, FusedBatchNormReluMasksTheGradient) {
    EXPECT_EQ(math::batchnorm_forward_element(-1.0f, 2.0f, 0.5f, true), 0.0f);
    EXPECT_EQ(math::batchnorm_forward_element(-1.0f, 2.0f, 0.5f, false), -1.5f);
    EXPECT_EQ(math::batchnorm_forward_element(1.0f, 2.0f, 0.5f, true), 2.5f);
    EXPECT_EQ(math::batchnorm_output_gradient(4.0f, 0.0f, true), 0.0f);
    EXPECT_EQ(math::batchnorm_output_gradient(4.0f, 0.25f, true), 4.0f);
    EXPECT_EQ(math::batchnorm_output_gradient(4.0f, 0.0f, false), 4.0f);
    // A channel of one value: zero variance, the output is beta and the running variance moves
    // towards zero without dividing by zero.
    const math::BatchNormForward f =
        math::batchnorm_forward_channel(8.0, 32.0, 2.0, 1.0f, 0.5f, 0.0f, 1.0f, 0.1, 1e-5);
    EXPECT_FLOAT_EQ(f.mean, 4.0f);
    EXPECT_EQ(math::batchnorm_forward_element(4.0f, f.scale, f.shift, false), 0.5f);
    EXPECT_FLOAT_EQ(f.running_var, 0.9f);
}

}  // namespace
