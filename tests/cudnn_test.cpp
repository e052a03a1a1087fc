// The cuDNN backend's settings, on the CPU: option parsing, what each math mode implies (engines,
// math types, storage), and how phase events are recorded while a step is captured or not.
#include "backend_comparison.hpp"
#include "cudnn_small_hourglass.hpp"
#include "events.hpp"
#include "graph_convolution.hpp"
#include "hb/plugin.hpp"
#include "math_mode.hpp"
#include "options.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace {

using namespace hb_cudnn;
using namespace cudnn_host_test;
using harness::testing::rmsprop;

hb_status status_of(const std::vector<hb_option>& options, const char* device = "cuda:0") {
    const hb_optimizer o = rmsprop();
    hb_session_desc desc{};
    desc.struct_size = sizeof(desc);
    desc.graph = problem().abi.get();
    desc.optimizer = &o;
    desc.device = device;
    desc.num_options = static_cast<int32_t>(options.size());
    desc.options = options.data();
    try {
        parse_settings(desc);
        return HB_OK;
    } catch (const hb::Error& e) {
        return e.status();
    }
}

TEST(CudnnEvents, RecordedAsGraphNodesOnlyWhileCapturing) {
    using hb_cudnn::event_record_flags;
    EXPECT_EQ(event_record_flags(cudaStreamCaptureStatusActive), cudaEventRecordExternal);
    EXPECT_EQ(event_record_flags(cudaStreamCaptureStatusNone), cudaEventRecordDefault);
    EXPECT_EQ(event_record_flags(cudaStreamCaptureStatusInvalidated), cudaEventRecordDefault);
}

TEST(CudnnGraphConvolution, EnginesAdmittedByMathMode) {
    using hb_cudnn::EngineNotes;
    const EngineNotes plain, tensor_core{true, false, false}, down{false, true, false},
        reduced{true, false, true};
    EXPECT_TRUE(MathMode(Math::fp32).admits(plain));
    EXPECT_FALSE(MathMode(Math::fp32).admits(tensor_core));
    for (Math m : {Math::tf32, Math::bf16}) {
        EXPECT_TRUE(MathMode(m).admits(plain));
        EXPECT_TRUE(MathMode(m).admits(tensor_core));
    }
    for (Math m : {Math::fp32, Math::tf32, Math::bf16}) {
        EXPECT_FALSE(MathMode(m).admits(down));
        EXPECT_FALSE(MathMode(m).admits(reduced));
    }
}

// Everything the step does differently by math mode, as the policy answers it.
TEST(CudnnMathMode, WhatEachModeImplies) {
    const MathMode fp32(Math::fp32), tf32(Math::tf32), bf16(Math::bf16);
    for (const MathMode* m : {&fp32, &tf32}) {
        EXPECT_EQ(m->storage(), Storage::f32) << m->name();
        EXPECT_STREQ(m->activation_type(), "float32");
        EXPECT_EQ(m->data_type(), CUDNN_DATA_FLOAT);
        EXPECT_FALSE(m->converts_weights());
        EXPECT_FALSE(m->own_channel_kernels());
        EXPECT_EQ(m->minimum_compute_capability(), 0);
    }
    EXPECT_EQ(bf16.storage(), Storage::bf16);
    EXPECT_STREQ(bf16.activation_type(), "bfloat16");
    EXPECT_EQ(bf16.data_type(), CUDNN_DATA_BFLOAT16);
    EXPECT_TRUE(bf16.converts_weights());
    EXPECT_TRUE(bf16.own_channel_kernels());
    EXPECT_EQ(bf16.minimum_compute_capability(), 8);
    EXPECT_STREQ(bf16.name(), "bf16");

    // Legacy convolutions: strict float32 requests and runs FMA and admits no tensor-op result;
    // the others request tensor ops and run what was measured.
    EXPECT_EQ(fp32.requested_math(), CUDNN_FMA_MATH);
    EXPECT_TRUE(fp32.admits(CUDNN_FMA_MATH));
    EXPECT_TRUE(fp32.admits(CUDNN_DEFAULT_MATH));
    EXPECT_FALSE(fp32.admits(CUDNN_TENSOR_OP_MATH));
    EXPECT_EQ(fp32.run_math(CUDNN_DEFAULT_MATH), CUDNN_FMA_MATH);
    for (const MathMode* m : {&tf32, &bf16}) {
        EXPECT_EQ(m->requested_math(), CUDNN_TENSOR_OP_MATH);
        EXPECT_TRUE(m->admits(CUDNN_TENSOR_OP_MATH));
        EXPECT_EQ(m->run_math(CUDNN_TENSOR_OP_MATH), CUDNN_TENSOR_OP_MATH);
        EXPECT_EQ(m->run_math(CUDNN_DEFAULT_MATH), CUDNN_DEFAULT_MATH);
    }
}

TEST(CudnnOptions, DefaultsAndValues) {
    const hb_optimizer o = rmsprop();
    std::vector<hb_option> options = {{"math", "tf32"},
                                      {"layout", "nhwc"},
                                      {"fuse_batchnorm_relu", "true"},
                                      {"cuda_graphs", "1"},
                                      {"convolution_api", "legacy"},
                                      {"batchnorm_api", "legacy"}};
    hb_session_desc desc{};
    desc.struct_size = sizeof(desc);
    desc.graph = problem().abi.get();
    desc.optimizer = &o;
    desc.device = "cuda:3";
    desc.placement = HB_PLACEMENT_HOST;
    desc.num_options = 6;
    desc.options = options.data();
    const Settings s = parse_settings(desc);
    EXPECT_EQ(s.math, Math::tf32);
    EXPECT_EQ(s.layout, Layout::nhwc);
    EXPECT_EQ(s.convolutions, ConvolutionApi::legacy);
    EXPECT_EQ(s.batchnorm, BatchNormApi::legacy);
    EXPECT_TRUE(s.fuse_batchnorm_relu);
    EXPECT_TRUE(s.cuda_graphs);
    EXPECT_EQ(s.device, 3);
    EXPECT_EQ(s.placement, HB_PLACEMENT_HOST);

    desc.num_options = 0;
    const Settings d = parse_settings(desc);
    EXPECT_EQ(d.math, Math::fp32);
    EXPECT_EQ(d.layout, Layout::nchw);
    EXPECT_EQ(d.convolutions, ConvolutionApi::graph);
    EXPECT_EQ(d.batchnorm, BatchNormApi::ex);
    EXPECT_FALSE(d.fuse_batchnorm_relu);
    EXPECT_FALSE(d.cuda_graphs);
    EXPECT_EQ(MathMode(d.math).storage(), Storage::f32);

    options[0].value = "bf16";
    desc.num_options = 1;
    const Settings b = parse_settings(desc);
    EXPECT_EQ(b.math, Math::bf16);
    EXPECT_EQ(MathMode(b.math).storage(), Storage::bf16);
    EXPECT_EQ(element_bytes(Storage::bf16), 2);
}

// ABI 2.3's request for the input's gradient, off unless asked; a description from an older
// harness ends before it.
TEST(CudnnOptions, InputGradient) {
    const hb_optimizer o = rmsprop();
    hb_session_desc desc{};
    desc.struct_size = sizeof(desc);
    desc.graph = problem().abi.get();
    desc.optimizer = &o;
    desc.device = "cuda:0";
    EXPECT_FALSE(parse_settings(desc).input_gradient);
    desc.input_gradient = 1;
    EXPECT_TRUE(parse_settings(desc).input_gradient);
    desc.struct_size = offsetof(hb_session_desc, input_gradient);
    EXPECT_FALSE(parse_settings(desc).input_gradient);
}

TEST(CudnnOptions, Rejections) {
    EXPECT_EQ(status_of({{"math", "fp16"}}), HB_UNSUPPORTED);
    EXPECT_EQ(status_of({{"math", "fp64"}}), HB_UNSUPPORTED);
    EXPECT_EQ(status_of({{"layout", "chwn"}}), HB_UNSUPPORTED);
    EXPECT_EQ(status_of({{"convolution_api", "v7"}}), HB_UNSUPPORTED);
    EXPECT_EQ(status_of({{"batchnorm_api", "v7"}}), HB_UNSUPPORTED);
    EXPECT_EQ(status_of({{"cuda_graph", "true"}}), HB_UNSUPPORTED);
    EXPECT_EQ(status_of({{"fuse_batchnorm_relu", "maybe"}}), HB_UNSUPPORTED);
    EXPECT_EQ(status_of({}, "cpu"), HB_UNAVAILABLE);
    EXPECT_EQ(status_of({}, "cuda:x"), HB_UNAVAILABLE);
    EXPECT_EQ(status_of({}, "cuda"), HB_OK);
    EXPECT_EQ(parse_device("cuda:12"), 12);
}

}  // namespace
