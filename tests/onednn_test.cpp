// The oneDNN backend's host-side logic on its own: the names, offsets and padding of its blocked
// layouts, and its loops for what oneDNN has no primitive for (RMSProp, the loss, the running
// statistics, 2x2 pooling and upsampling).
#include "backend_comparison.hpp"
#include "kernels.hpp"
#include "layout.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace {

using harness::testing::rmsprop;

TEST(OnednnLayout, NamesAndOffsetsOfBlockedLayouts) {
    using tag = dnnl::memory::format_tag;
    const dnnl::memory::desc md({2, 12, 3, 5}, dnnl::memory::data_type::f32, tag::nChw8c);
    EXPECT_EQ(hb_onednn::layout_name(md, "nchw"), "nChw8c");
    EXPECT_TRUE(hb_onednn::has_padding(md));
    const int64_t index[] = {1, 9, 2, 3};
    // n * (2 blocks * 15 * 8) + block 1 * (15 * 8) + (h * 5 + w) * 8 + 9 % 8
    EXPECT_EQ(hb_onednn::physical_offset(md, index), 240 + 120 + (2 * 5 + 3) * 8 + 1);
    const auto mask = hb_onednn::element_mask(md);
    EXPECT_EQ(std::count(mask.begin(), mask.end(), 1), 2 * 12 * 3 * 5);
    const dnnl::memory::desc w({16, 8, 3, 3}, dnnl::memory::data_type::f32, tag::OIhw8i8o);
    EXPECT_EQ(hb_onednn::layout_name(w, "oihw"), "OIhw8i8o");
    EXPECT_EQ(hb_onednn::layout_name(hb_onednn::plain_desc({2, 3, 4, 5}), "nchw"), "nchw");
}

TEST(OnednnKernels, RmspropMatchesHandComputation) {
    for (const auto variant : {HB_RMSPROP_TORCH, HB_RMSPROP_TENSORFLOW}) {
        for (const float momentum : {0.0f, 0.9f}) {
            hb_optimizer o = rmsprop();
            o.variant = variant;
            o.momentum = momentum;
            o.weight_decay = 0.01f;
            std::vector<float> p = {0.5f, -1.0f, 2.0f}, g = {0.1f, -0.2f, 0.0f};
            std::vector<float> v = {0.0f, 0.5f, 1.0f}, m = {0.0f, 0.1f, -0.1f};
            const std::vector<float> p0 = p, v0 = v, m0 = m;
            hb_onednn::rmsprop_update(o, 3, p.data(), g.data(), v.data(), m.data(), 2);
            for (size_t i = 0; i < 3; ++i) {
                const double gi = g[i] + 0.01 * p0[i];
                const double vi = 0.99 * v0[i] + 0.01 * gi * gi;
                const bool torch = variant == HB_RMSPROP_TORCH;
                const double d = torch ? std::sqrt(vi) + 1e-8 : std::sqrt(vi + 1e-8);
                double pi = p0[i];
                if (momentum == 0) {
                    pi -= 2.5e-4 * gi / d;
                } else {
                    const double b =
                        torch ? momentum * m0[i] + gi / d : momentum * m0[i] + 2.5e-4 * gi / d;
                    pi -= torch ? 2.5e-4 * b : b;
                }
                EXPECT_NEAR(v[i], vi, 1e-6 * vi + 1e-12);
                EXPECT_NEAR(p[i], pi, 1e-6);
            }
        }
    }
}

TEST(OnednnKernels, SquaredErrorSkipsPaddingAndRunningStatisticsAreUnbiased) {
    const std::vector<float> y = {1, 2, 3, 100}, t = {0, 0, 1, -100};
    const std::vector<uint8_t> mask = {1, 1, 1, 0};
    EXPECT_DOUBLE_EQ(hb_onednn::squared_error(4, y.data(), t.data(), mask.data(), 2), 9.0);
    std::vector<float> dy(4, 5.0f);
    hb_onednn::squared_error_gradient(4, y.data(), t.data(), mask.data(), 0.5f, dy.data(), true, 2);
    EXPECT_EQ(dy, (std::vector<float>{5.5f, 6.0f, 6.0f, 5.0f}));
    const float mean[] = {2.0f}, var[] = {3.0f};
    float rm[] = {1.0f}, rv[] = {1.0f};
    hb_onednn::update_running_statistics(1, mean, var, 0.1, 4, rm, rv);
    EXPECT_FLOAT_EQ(rm[0], 0.9f + 0.2f);
    EXPECT_FLOAT_EQ(rv[0], 0.9f + 0.1f * 3.0f * 4.0f / 3.0f);
}

// One plane of 4x4 pixels of `block` channels in nChw<block>c: channel c of pixel (h, w).
float pixel(const std::vector<float>& v, int block, int h, int w, int c) {
    return v[static_cast<size_t>(((h * 4) + w) * block + c)];
}

TEST(OnednnKernels, PoolingAndUpsamplingLoopsInBlockedLayouts) {
    for (int block : {1, 8}) {
        std::vector<float> x(static_cast<size_t>(16 * block));
        for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 13);
        // Channel 0 of the first window: all equal, so the first (top left) is the maximum.
        for (int k : {0, 1, 4, 5}) x[static_cast<size_t>(k * block)] = 20.0f;
        std::vector<float> y(static_cast<size_t>(4 * block));
        std::vector<uint8_t> argmax(y.size());
        hb_onednn::max_pool_2x2_forward(1, 4, 4, block, x.data(), y.data(), argmax.data(), 2);
        std::vector<float> dy(y.size()), dx(x.size(), -1.0f);
        for (size_t i = 0; i < dy.size(); ++i) dy[i] = 1.0f + static_cast<float>(i);
        hb_onednn::max_pool_2x2_backward(1, 4, 4, block, dy.data(), argmax.data(), dx.data(), 2);
        for (int oh = 0; oh < 2; ++oh)
            for (int ow = 0; ow < 2; ++ow)
                for (int c = 0; c < block; ++c) {
                    float best = -1;
                    int first = -1;
                    for (int k = 0; k < 4; ++k) {
                        const float v = pixel(x, block, 2 * oh + k / 2, 2 * ow + k % 2, c);
                        if (v > best) best = v, first = k;
                    }
                    const size_t out = static_cast<size_t>((oh * 2 + ow) * block + c);
                    EXPECT_EQ(y[out], best);
                    EXPECT_EQ(argmax[out], first);
                    for (int k = 0; k < 4; ++k)
                        EXPECT_EQ(pixel(dx, block, 2 * oh + k / 2, 2 * ow + k % 2, c),
                                  k == first ? dy[out] : 0.0f);
                }
        EXPECT_EQ(argmax[0], 0);

        std::vector<float> small(y.size(), -1.0f);
        hb_onednn::upsample_2x_backward(1, 4, 4, block, x.data(), small.data(), 2);
        for (int oh = 0; oh < 2; ++oh)
            for (int ow = 0; ow < 2; ++ow)
                for (int c = 0; c < block; ++c) {
                    float sum = 0;
                    for (int k = 0; k < 4; ++k)
                        sum += pixel(x, block, 2 * oh + k / 2, 2 * ow + k % 2, c);
                    EXPECT_FLOAT_EQ(small[static_cast<size_t>((oh * 2 + ow) * block + c)], sum);
                }
    }
}

}  // namespace
