// The cuDNN backend's host-side logic, on the CPU: option parsing, what each math mode implies, the
// step plan of a small stacked hourglass (fusions, gradient accumulation, buffer lifetimes), the
// cuDNN descriptors of its convolutions, how phase events are recorded, and the arithmetic of its
// own kernels (bf16 rounding, batch norm) against the reference backend.
#include "backend_comparison.hpp"
#include "convolution.hpp"
#include "data/initial_state.hpp"
#include "events.hpp"
#include "graph_convolution.hpp"
#include "hb/plugin.hpp"
#include "hb/rmsprop.hpp"
#include "kernel_math.hpp"
#include "layers.hpp"
#include "math_mode.hpp"
#include "model/hourglass.hpp"
#include "options.hpp"
#include "plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace {

using namespace hb_cudnn;

struct Problem {
    harness::model::Graph graph =
        harness::model::build_hourglass(harness::testing::small_hourglass());
    harness::model::AbiGraph abi{graph};
};

const Problem& problem() {
    static const Problem p;
    return p;
}

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

// Checks the bookkeeping of one plan: gradient writers, accumulation flags and lifetimes.
void check_plan(const Plan& plan) {
    const auto& layers = plan.layers();
    const auto& values = plan.values();
    std::map<int, int> overwrites, writers;
    for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
        if (it->absorbed) continue;
        for (size_t k = 0; k < it->inputs.size(); ++k) {
            if (!it->input_gradient[k]) continue;
            const int v = it->inputs[k];
            // The first writer in backward order overwrites, every later one adds.
            EXPECT_EQ(it->accumulate[k], writers[v] > 0) << it->name;
            ++writers[v];
            if (!it->accumulate[k]) ++overwrites[v];
        }
    }
    for (size_t v = 0; v < values.size(); ++v) {
        const ValuePlan& value = values[v];
        if (!value.needs_gradient) continue;
        EXPECT_EQ(overwrites[int(v)], 1) << value.name;
        int slots = 0;
        for (int c : value.consumers)
            if (!layers[c].absorbed) ++slots;
        EXPECT_EQ(writers[int(v)], slots) << value.name;
        ASSERT_GE(value.gradient_buffer, 0) << value.name;
        const BufferRequest& g = plan.requests()[value.gradient_buffer];
        for (int c : value.consumers) {
            EXPECT_LE(g.first, layers[c].backward_time) << value.name;
            EXPECT_GE(g.last, layers[c].backward_time) << value.name;
        }
    }
    for (const LayerPlan& layer : layers) {
        if (layer.absorbed) continue;
        for (int v : layer.inputs) {
            if (values[v].is_input) continue;
            ASSERT_GE(values[v].buffer, 0) << values[v].name;
            const BufferRequest& b = plan.requests()[values[v].buffer];
            EXPECT_LE(b.first, layer.forward_time) << layer.name;
            EXPECT_GE(b.last, layer.forward_time) << layer.name;
            if (layer.kind == HB_LAYER_CONV2D || layer.kind == HB_LAYER_BATCHNORM ||
                layer.kind == HB_LAYER_MAXPOOL2D || layer.kind == HB_LAYER_MSE_LOSS) {
                EXPECT_GE(b.last, layer.backward_time) << layer.name << " saves its input";
            }
        }
    }
    const ArenaPlan arena = plan_arena(plan.requests());
    EXPECT_EQ(find_conflict(plan.requests(), arena), std::make_pair(-1, -1));
    EXPECT_LT(arena.bytes, arena.requested_bytes);
}

TEST(CudnnPlan, SmallHourglass) {
    const hb_graph& graph = *problem().abi.get();
    const Plan plan(graph);
    ASSERT_EQ(plan.layers().size(), size_t(graph.num_layers));
    EXPECT_EQ(plan.loss_count(), 2);
    EXPECT_EQ(plan.fusions(), 0);
    check_plan(plan);
    // Every parameter is aligned and inside its block; blocks do not overlap.
    int64_t trainable = 0;
    for (const TensorPlan& t : plan.tensors()) {
        EXPECT_EQ(t.offset % Plan::tensor_alignment, 0) << t.name;
        EXPECT_LE(t.offset + t.elements,
                  t.trainable ? plan.parameter_floats() : plan.statistics_floats());
        if (t.trainable) trainable += t.elements;
    }
    EXPECT_GE(plan.parameter_floats(), trainable);
    for (const LayerPlan& l : plan.layers())
        if (l.kind == HB_LAYER_CONV2D && plan.values()[l.inputs[0]].is_input) {
            EXPECT_FALSE(l.input_gradient[0]) << "no gradient for the image batch";
        }
}

TEST(CudnnPlan, FusesEveryBatchNormFeedingOnlyAReLU) {
    const hb_graph& graph = *problem().abi.get();
    const std::vector<int> candidates = fusion_candidates(graph);
    int batchnorms = 0;
    for (int32_t i = 0; i < graph.num_layers; ++i)
        batchnorms += graph.layers[i].kind == HB_LAYER_BATCHNORM;
    EXPECT_EQ(int(candidates.size()), batchnorms);  // in the hourglass every BN feeds one ReLU
    const Plan fused(graph, std::set<int>(candidates.begin(), candidates.end()));
    EXPECT_EQ(fused.fusions(), batchnorms);
    int absorbed = 0;
    for (const LayerPlan& l : fused.layers()) {
        absorbed += l.absorbed;
        if (!l.fused_relu) continue;
        EXPECT_FALSE(fused.values()[l.output].materialized);
        EXPECT_EQ(fused.layers()[fused.values()[l.output].consumers[0]].output, l.writes);
    }
    EXPECT_EQ(absorbed, batchnorms);
    check_plan(fused);
    const Plan plain(graph);
    EXPECT_LT(plan_arena(fused.requests()).requested_bytes,
              plan_arena(plain.requests()).requested_bytes);
    // Only batchnorm layers fuse (the last layer is a loss).
    EXPECT_THROW(Plan(graph, {graph.num_layers - 1}), hb::Error);
}

// Two plans are the same plan: layers, values and every buffer request.
void expect_same_plan(const Plan& a, const Plan& b) {
    ASSERT_EQ(a.layers().size(), b.layers().size());
    for (size_t i = 0; i < a.layers().size(); ++i) {
        const LayerPlan &x = a.layers()[i], &y = b.layers()[i];
        EXPECT_EQ(x.fused_relu, y.fused_relu) << x.name;
        EXPECT_EQ(x.absorbed, y.absorbed) << x.name;
        EXPECT_EQ(x.writes, y.writes) << x.name;
        EXPECT_EQ(x.input_gradient, y.input_gradient) << x.name;
        EXPECT_EQ(x.accumulate, y.accumulate) << x.name;
        EXPECT_EQ(x.runs_backward, y.runs_backward) << x.name;
        EXPECT_EQ(x.saved, y.saved) << x.name;
    }
    ASSERT_EQ(a.values().size(), b.values().size());
    for (size_t v = 0; v < a.values().size(); ++v) {
        EXPECT_EQ(a.values()[v].buffer, b.values()[v].buffer) << a.values()[v].name;
        EXPECT_EQ(a.values()[v].gradient_buffer, b.values()[v].gradient_buffer);
    }
    ASSERT_EQ(a.requests().size(), b.requests().size());
    for (size_t r = 0; r < a.requests().size(); ++r) {
        const BufferRequest &x = a.requests()[r], &y = b.requests()[r];
        EXPECT_EQ(std::make_tuple(x.bytes, x.first, x.last, x.what),
                  std::make_tuple(y.bytes, y.first, y.last, y.what));
    }
    EXPECT_EQ(a.storage(), b.storage());
}

// The step decides its fusions while the plan is built (a trial on the device for each): each
// candidate is asked once, in layer order, as read from the graph, and the plan is the one the
// same fusions given up front make.
TEST(CudnnPlan, FusionsChosenWhilePlanningMakeThePlanGivenThem) {
    const hb_graph& graph = *problem().abi.get();
    const std::vector<int> candidates = fusion_candidates(graph);
    ASSERT_GT(candidates.size(), 2u);
    for (Storage storage : {Storage::f32, Storage::bf16}) {
        std::vector<std::string> asked;
        std::set<int> accepted;
        const Plan chosen(graph, storage, [&](const LayerPlan& batchnorm) {
            EXPECT_EQ(batchnorm.kind, HB_LAYER_BATCHNORM);
            EXPECT_FALSE(batchnorm.fused_relu);
            EXPECT_GT(batchnorm.in.elements(), 0);
            asked.push_back(batchnorm.name);
            const bool accept = asked.size() % 2 == 1;  // every other one
            if (accept) accepted.insert(candidates[asked.size() - 1]);
            return accept;
        });
        ASSERT_EQ(asked.size(), candidates.size());
        for (size_t k = 0; k < candidates.size(); ++k)
            EXPECT_EQ(asked[k], graph.layers[candidates[k]].name);
        EXPECT_EQ(chosen.fusions(), int(accepted.size()));
        expect_same_plan(chosen, Plan(graph, accepted, storage));
        expect_same_plan(Plan(graph, storage, [](const LayerPlan&) { return false; }),
                         Plan(graph, {}, storage));
    }
}

// Asked for the input's gradient, the plan sends the input a gradient from each layer that reads
// it, in one more buffer, planned after every other one, from the first of those layers' backward
// to the step's end; everything else is the plan made without it, and that plan is the default.
TEST(CudnnPlan, InputGradientOnRequest) {
    const hb_graph& graph = *problem().abi.get();
    const std::vector<int> candidates = fusion_candidates(graph);
    const std::set<int> all(candidates.begin(), candidates.end());
    for (Storage storage : {Storage::f32, Storage::bf16})
        for (const std::set<int>& fuse : {std::set<int>{}, all}) {
            const Plan plain(graph, fuse, storage), asked(graph, fuse, storage, true);
            expect_same_plan(plain, Plan(graph, fuse, storage, false));
            const bool fused = !fuse.empty();  // every candidate or none
            const FusionChoice choice = [fused](const LayerPlan&) { return fused; };
            expect_same_plan(asked, Plan(graph, storage, choice, true));
            EXPECT_FALSE(plain.input_gradient());
            EXPECT_TRUE(asked.input_gradient());
            check_plan(asked);

            const int in = asked.input();
            const ValuePlan &none = plain.values()[size_t(in)], &input = asked.values()[size_t(in)];
            EXPECT_FALSE(none.needs_gradient);
            EXPECT_EQ(none.gradient_buffer, -1);
            EXPECT_TRUE(input.needs_gradient);
            ASSERT_EQ(asked.requests().size(), plain.requests().size() + 1);
            ASSERT_EQ(input.gradient_buffer, int(plain.requests().size()));
            for (size_t r = 0; r < plain.requests().size(); ++r) {
                const BufferRequest &x = plain.requests()[r], &y = asked.requests()[r];
                EXPECT_EQ(std::make_tuple(x.bytes, x.first, x.last, x.what),
                          std::make_tuple(y.bytes, y.first, y.last, y.what));
            }
            for (size_t v = 0; v < plain.values().size(); ++v) {
                if (int(v) == in) continue;
                EXPECT_EQ(plain.values()[v].buffer, asked.values()[v].buffer);
                EXPECT_EQ(plain.values()[v].gradient_buffer, asked.values()[v].gradient_buffer);
            }

            int readers = 0, first = asked.step_length();
            for (size_t i = 0; i < asked.layers().size(); ++i) {
                const LayerPlan &p = plain.layers()[i], &a = asked.layers()[i];
                EXPECT_EQ(p.runs_backward, a.runs_backward) << a.name;
                EXPECT_EQ(p.saved, a.saved) << a.name;
                for (size_t k = 0; k < a.inputs.size(); ++k) {
                    if (a.inputs[k] != in) {
                        EXPECT_EQ(p.input_gradient[k], a.input_gradient[k]) << a.name;
                        EXPECT_EQ(p.accumulate[k], a.accumulate[k]) << a.name;
                        continue;
                    }
                    ++readers;
                    EXPECT_FALSE(p.input_gradient[k]) << a.name;
                    EXPECT_EQ(bool(a.input_gradient[k]), a.runs_backward) << a.name;
                    if (a.runs_backward) first = std::min(first, a.backward_time);
                }
            }
            EXPECT_GE(readers, 1);
            const BufferRequest& g = asked.requests()[size_t(input.gradient_buffer)];
            EXPECT_EQ(g.bytes, input.shape.elements() * element_bytes(storage));
            EXPECT_EQ(g.first, first);
            EXPECT_EQ(g.last, asked.step_length() - 1);
            EXPECT_EQ(g.what, "d(" + input.name + ")");
        }
}

TEST(CudnnPlan, Bf16StoresActivationsInHalfTheBytes) {
    const hb_graph& graph = *problem().abi.get();
    const Plan f32(graph), bf16(graph, {}, Storage::bf16);
    EXPECT_EQ(bf16.storage(), Storage::bf16);
    EXPECT_EQ(bf16.parameter_floats(), f32.parameter_floats());  // parameters stay float32
    ASSERT_EQ(bf16.requests().size(), f32.requests().size());
    for (size_t i = 0; i < f32.values().size(); ++i) {
        const ValuePlan& v = f32.values()[i];
        for (int request : {v.buffer, v.gradient_buffer}) {
            if (request < 0) continue;
            EXPECT_EQ(2 * bf16.requests()[size_t(request)].bytes,
                      f32.requests()[size_t(request)].bytes)
                << v.name;
        }
    }
    for (const LayerPlan& l : bf16.layers()) {  // the saved batch statistics stay float32
        if (l.kind != HB_LAYER_BATCHNORM) continue;
        EXPECT_EQ(bf16.requests()[size_t(l.saved)].bytes, 2 * l.in.c * 4) << l.name;
    }
    check_plan(bf16);
}

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

TEST(CudnnPlan, RejectsBrokenGraphs) {
    hb_graph graph = *problem().abi.get();
    std::vector<hb_layer> layers(graph.layers, graph.layers + graph.num_layers);
    layers[0].kernel = 5;  // the stem convolution's weight is 7x7
    graph.layers = layers.data();
    EXPECT_THROW(Plan{graph}, hb::Error);
}

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
