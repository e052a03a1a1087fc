// The cuDNN descriptors of every convolution of the small hourglass's plan, made on the host
// without a GPU, in each math mode and layout.
#include "convolution.hpp"
#include "cudnn_small_hourglass.hpp"
#include "hb/error.hpp"
#include "math_mode.hpp"
#include "options.hpp"
#include "plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <utility>

namespace {

using namespace hb_cudnn;
using namespace cudnn_host_test;

// cuDNN's descriptor calls run on the host, so every convolution's descriptors are checked here
// without a GPU: data types, layouts, padding and strides, math types and the output shape.
class CudnnDescriptors : public ::testing::TestWithParam<std::tuple<Math, Layout>> {};

TEST_P(CudnnDescriptors, EveryConvolutionOfThePlan) {
    const auto [math, layout] = GetParam();
    const cudnnDataType_t type = math == Math::bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
    const MathMode policy(math);
    const Plan plan(*problem().abi.get(), {}, policy.storage());
    int convolutions = 0;
    for (const LayerPlan& l : plan.layers()) {
        if (l.kind != HB_LAYER_CONV2D) continue;
        ++convolutions;
        const ConvolutionDescriptors d = make_convolution_descriptors(l, layout, policy);
        for (const auto& [descriptor, shape] :
             {std::pair{d.x.get(), l.in}, std::pair{d.y.get(), l.out}}) {
            cudnnDataType_t t{};
            int n = 0, c = 0, h = 0, w = 0, ns = 0, cs = 0, hs = 0, ws = 0;
            ASSERT_EQ(
                cudnnGetTensor4dDescriptor(descriptor, &t, &n, &c, &h, &w, &ns, &cs, &hs, &ws),
                CUDNN_STATUS_SUCCESS);
            EXPECT_EQ(t, type) << l.name;
            EXPECT_EQ((Shape{n, c, h, w}), shape) << l.name;
            EXPECT_EQ(layout == Layout::nhwc ? cs : ws, 1) << l.name;
        }
        cudnnDataType_t t{};
        cudnnTensorFormat_t format{};
        int k = 0, c = 0, h = 0, w = 0;
        ASSERT_EQ(cudnnGetFilter4dDescriptor(d.w.get(), &t, &format, &k, &c, &h, &w),
                  CUDNN_STATUS_SUCCESS);
        EXPECT_EQ(t, type);
        EXPECT_EQ(format, layout == Layout::nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW);
        EXPECT_EQ((Shape{k, c, h, w}), (Shape{l.out.c, l.in.c, l.kernel, l.kernel})) << l.name;
        for (const cudnnConvolutionDescriptor_t direction :
             {d.forward.get(), d.backward_data.get(), d.backward_filter.get()}) {
            int pad_h = 0, pad_w = 0, u = 0, v = 0, dilation_h = 0, dilation_w = 0;
            cudnnConvolutionMode_t mode{};
            cudnnDataType_t compute{};
            ASSERT_EQ(cudnnGetConvolution2dDescriptor(direction, &pad_h, &pad_w, &u, &v,
                                                      &dilation_h, &dilation_w, &mode, &compute),
                      CUDNN_STATUS_SUCCESS);
            EXPECT_EQ(pad_h, l.padding);
            EXPECT_EQ(u, l.stride);
            EXPECT_EQ(mode, CUDNN_CROSS_CORRELATION);
            EXPECT_EQ(compute, CUDNN_DATA_FLOAT);  // bf16 accumulates in float too
            cudnnMathType_t requested{};
            ASSERT_EQ(cudnnGetConvolutionMathType(direction, &requested), CUDNN_STATUS_SUCCESS);
            // Strict float32 never lets cuDNN choose TF32.
            EXPECT_EQ(requested, math == Math::fp32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH);
        }
        // The bias is added by cuDNN in float math and by the backend's own kernel in bf16.
        EXPECT_EQ(d.bias != nullptr, l.bias >= 0 && math != Math::bf16) << l.name;
    }
    EXPECT_GT(convolutions, 10);
}

INSTANTIATE_TEST_SUITE_P(Modes, CudnnDescriptors,
                         ::testing::Combine(::testing::Values(Math::fp32, Math::tf32, Math::bf16),
                                            ::testing::Values(Layout::nchw, Layout::nhwc)),
                         [](const auto& mode) {
                             return std::string(to_string(std::get<0>(mode.param))) + "_" +
                                    to_string(std::get<1>(mode.param));
                         });

TEST(CudnnDescriptorsCheck, AnOutputShapeCudnnDisagreesWithNamesTheLayer) {
    const Plan plan(*problem().abi.get());
    LayerPlan layer = *std::find_if(plan.layers().begin(), plan.layers().end(),
                                    [](const LayerPlan& l) { return l.kind == HB_LAYER_CONV2D; });
    layer.out.h += 1;
    try {
        make_convolution_descriptors(layer, Layout::nchw, MathMode(Math::fp32));
        FAIL() << "expected an error";
    } catch (const hb::Error& e) {
        EXPECT_NE(std::string(e.what()).find(layer.name), std::string::npos) << e.what();
    }
}

}  // namespace
