// The operations a step of the cuDNN backend enqueues and their phases, on the host
// (docs/design.md §3 "Profiling"): step_operations, from the plan of a small stacked hourglass and
// the calls setup chose.
#include "cudnn_small_hourglass.hpp"
#include "hb/error.hpp"
#include "operations.hpp"
#include "plan.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace hb_cudnn;
using namespace cudnn_host_test;

bool named(const Operation& o, const char* name) {
    return std::strcmp(o.name, name) == 0;
}

// The operations of one layer, by phase.
std::map<int, std::multimap<hb_phase, std::string>> by_layer(const StepOperations& step) {
    std::map<int, std::multimap<hb_phase, std::string>> out;
    for (const Operation& o : step.operations) out[o.layer].emplace(o.phase, o.name);
    return out;
}

TEST(CudnnStepOperations, GraphApiOnTheDevice) {
    const Plan plan = plan_of(false);
    LayerCalls layer;
    layer.graph_convolution = true;
    layer.batchnorm = Calls::cudnn_ex;
    const StepOperations step = step_operations(plan, uniform_calls(plan, layer));
    const auto& ops = step.operations;
    ASSERT_FALSE(ops.empty());
    // Nothing before the layers with device placement and no graph; the losses' copy after.
    EXPECT_EQ(step.graph_begin, 0u);
    EXPECT_EQ(step.graph_end, ops.size() - 1);
    EXPECT_EQ(ops.back(), (Operation{-1, HB_PHASE_TRANSFER, op::memcpy_device_to_host}));
    EXPECT_EQ(ops[ops.size() - 2], (Operation{-1, HB_PHASE_UPDATE, op::rmsprop}));

    // Forward in layer order, then backward in reverse, then the update.
    const int32_t layers = static_cast<int32_t>(plan.layers().size());
    size_t i = 0;
    int32_t last = -1;
    for (; i < ops.size() && ops[i].phase == HB_PHASE_FORWARD; ++i) {
        EXPECT_GE(ops[i].layer, last);
        last = ops[i].layer;
    }
    EXPECT_EQ(last, layers - 1);
    last = layers;
    for (; i < ops.size() && ops[i].layer >= 0; ++i) {
        EXPECT_NE(ops[i].phase, HB_PHASE_FORWARD) << to_string(ops[i]);
        EXPECT_LE(ops[i].layer, last);
        last = ops[i].layer;
    }
    EXPECT_EQ(i, ops.size() - 2);

    const auto layer_ops = by_layer(step);
    int convolutions = 0;
    for (int32_t l = 0; l < layers; ++l) {
        const LayerPlan& p = plan.layers()[size_t(l)];
        const auto found = layer_ops.find(l);
        ASSERT_NE(found, layer_ops.end()) << p.name;
        const auto& phases = found->second;
        switch (p.kind) {
            case HB_LAYER_CONV2D: {
                ++convolutions;
                // The convolution and its bias in each direction; the input gradient where the
                // input needs one (not the image's).
                EXPECT_EQ(phases.count(HB_PHASE_FORWARD), 2u) << p.name;
                EXPECT_EQ(phases.count(HB_PHASE_BACKWARD_WEIGHTS), 2u) << p.name;
                EXPECT_EQ(phases.count(HB_PHASE_BACKWARD_DATA),
                          p.inputs[0] == plan.input() ? 0u : 1u)
                    << p.name;
                EXPECT_EQ(phases.size(), p.inputs[0] == plan.input() ? 4u : 5u) << p.name;
                std::multiset<std::string> names;
                for (const auto& kv : phases) names.insert(kv.second);
                EXPECT_EQ(names.count(op::add_tensor), 1u);
                EXPECT_EQ(names.count(op::convolution_backward_bias), 1u);
                EXPECT_EQ(names.count(op::cudnn_graph), phases.size() - 2);
                break;
            }
            case HB_LAYER_BATCHNORM: {
                // One call yields the input gradient and gamma's and beta's: `backward`.
                std::multimap<hb_phase, std::string> expected{
                    {HB_PHASE_FORWARD, op::batchnorm_forward_ex},
                    {HB_PHASE_BACKWARD, op::batchnorm_backward_ex}};
                EXPECT_EQ(phases, expected) << p.name;
                break;
            }
            case HB_LAYER_ADD:
                EXPECT_EQ(phases.count(HB_PHASE_FORWARD), 1u);
                EXPECT_EQ(phases.count(HB_PHASE_BACKWARD_DATA), 1u);
                EXPECT_EQ(phases.size(), 2u);
                break;
            default:
                EXPECT_EQ(phases.count(HB_PHASE_FORWARD), 1u) << p.name;
                EXPECT_LE(phases.count(HB_PHASE_BACKWARD_DATA), 1u) << p.name;
                EXPECT_EQ(phases.size(), 1u + phases.count(HB_PHASE_BACKWARD_DATA)) << p.name;
                break;
        }
    }
    EXPECT_GT(convolutions, 10);
    // Every operation but the update and the copies belongs to a layer.
    for (const Operation& o : ops)
        if (o.layer < 0) {
            EXPECT_TRUE(o.phase == HB_PHASE_UPDATE || o.phase == HB_PHASE_TRANSFER) << to_string(o);
        }
}

TEST(CudnnStepOperations, LegacyCallsName) {
    const Plan plan = plan_of(false);
    LayerCalls layer;
    layer.batchnorm = Calls::cudnn;
    const StepOperations step = step_operations(plan, uniform_calls(plan, layer));
    std::multiset<std::string> names;
    for (const Operation& o : step.operations) names.insert(o.name);
    EXPECT_EQ(names.count(op::cudnn_graph), 0u);
    int convolutions = 0, batchnorms = 0;
    for (const LayerPlan& p : plan.layers()) {
        convolutions += p.kind == HB_LAYER_CONV2D;
        batchnorms += p.kind == HB_LAYER_BATCHNORM;
    }
    EXPECT_EQ(names.count(op::convolution_forward), size_t(convolutions));
    EXPECT_EQ(names.count(op::convolution_backward_filter), size_t(convolutions));
    EXPECT_EQ(names.count(op::convolution_backward_data), size_t(convolutions - 1));
    EXPECT_EQ(names.count(op::batchnorm_forward), size_t(batchnorms));
    EXPECT_EQ(names.count(op::batchnorm_backward), size_t(batchnorms));
    for (const Operation& o : step.operations) {
        if (named(o, op::convolution_forward)) {
            EXPECT_EQ(o.phase, HB_PHASE_FORWARD);
        }
        if (named(o, op::convolution_backward_data)) {
            EXPECT_EQ(o.phase, HB_PHASE_BACKWARD_DATA);
        }
        if (named(o, op::convolution_backward_filter)) {
            EXPECT_EQ(o.phase, HB_PHASE_BACKWARD_WEIGHTS);
        }
    }
}

// bf16 with host placement in NHWC: the batch copied in and converted each step, the own
// kernels, and each weight gradient widened to float32 after the convolution wrote it.
TEST(CudnnStepOperations, HostPlacementBf16Nhwc) {
    const Plan plan = plan_of(true, Storage::bf16);
    LayerCalls layer;
    layer.graph_convolution = true;
    layer.bias = Calls::own;
    layer.batchnorm = Calls::own;
    StepCalls calls = uniform_calls(plan, layer);
    calls.placement = HB_PLACEMENT_HOST;
    calls.nhwc = true;
    calls.bf16_input = true;
    calls.widens_weight_gradients = true;
    const StepOperations step = step_operations(plan, calls);
    const auto& ops = step.operations;
    ASSERT_GT(ops.size(), 6u);
    EXPECT_EQ(ops[0], (Operation{-1, HB_PHASE_TRANSFER, op::memcpy_host_to_device}));
    EXPECT_EQ(ops[1], (Operation{-1, HB_PHASE_TRANSFER, op::memcpy_host_to_device}));
    // The conversions run inside a captured step: they are enqueue_step's.
    EXPECT_EQ(step.graph_begin, 2u);
    EXPECT_EQ(ops[2], (Operation{-1, HB_PHASE_REORDER, op::nchw_to_nhwc}));
    EXPECT_EQ(ops[3], (Operation{-1, HB_PHASE_REORDER, op::to_bf16}));
    EXPECT_EQ(ops[4], (Operation{-1, HB_PHASE_REORDER, op::nchw_to_nhwc}));
    EXPECT_EQ(step.graph_end, ops.size() - 1);

    for (size_t i = 0; i < ops.size(); ++i) {
        const Operation& o = ops[i];
        if (o.layer < 0) continue;
        const LayerPlan& p = plan.layers()[size_t(o.layer)];
        // A fused ReLU is its batch norm's: the absorbed ReLU has no operation.
        EXPECT_FALSE(p.absorbed) << to_string(o);
        if (p.kind == HB_LAYER_BATCHNORM) {
            EXPECT_TRUE(named(o, o.phase == HB_PHASE_FORWARD ? op::own_batchnorm_forward
                                                             : op::own_batchnorm_backward));
        }
        if (p.kind != HB_LAYER_CONV2D) continue;
        if (o.phase == HB_PHASE_BACKWARD_WEIGHTS && named(o, op::cudnn_graph)) {
            // widened right after, then the bias gradient
            ASSERT_LT(i + 2, ops.size());
            EXPECT_EQ(ops[i + 1], (Operation{o.layer, HB_PHASE_REORDER, op::from_bf16}));
            EXPECT_EQ(ops[i + 2],
                      (Operation{o.layer, HB_PHASE_BACKWARD_WEIGHTS, op::bias_backward}));
        }
        if (o.phase == HB_PHASE_FORWARD && !named(o, op::cudnn_graph)) {
            EXPECT_TRUE(named(o, op::bias_forward));
        }
    }
}

TEST(CudnnStepOperations, CapturedStepCopiesItsBatchFirst) {
    const Plan plan = plan_of(false);
    LayerCalls layer;
    StepCalls calls = uniform_calls(plan, layer);
    calls.cuda_graphs = true;
    const StepOperations step = step_operations(plan, calls);
    EXPECT_EQ(step.graph_begin, 2u);
    for (size_t i = 0; i < 2; ++i)
        EXPECT_EQ(step.operations[i],
                  (Operation{-1, HB_PHASE_REORDER, op::memcpy_device_to_device}));
    EXPECT_EQ(step.graph_end, step.operations.size() - 1);
}

// The Ex batch norm writes its input gradient to scratch where it is added to an existing one,
// and a separate pass adds it: that pass is the layer's `backward_data`.
TEST(CudnnStepOperations, SeparateGradientAddIsBackwardData) {
    const Plan plan = plan_of(false);
    LayerCalls layer;
    layer.batchnorm = Calls::cudnn_ex;
    layer.gradient_scratch = true;
    const StepOperations step = step_operations(plan, uniform_calls(plan, layer));
    int checked = 0;
    for (size_t i = 0; i < step.operations.size(); ++i) {
        const Operation& o = step.operations[i];
        if (!named(o, op::batchnorm_backward_ex)) continue;
        const LayerPlan& p = plan.layers()[size_t(o.layer)];
        const bool adds = p.input_gradient[0];
        ASSERT_LT(i + 1, step.operations.size());
        EXPECT_EQ(step.operations[i + 1] ==
                      (Operation{o.layer, HB_PHASE_BACKWARD_DATA, op::add_backward}),
                  adds)
            << p.name;
        ++checked;
    }
    EXPECT_GT(checked, 0);
}

// Asked for the input's gradient, a step enqueues one operation more, through either API: the
// stem convolution's backward data, right before its weight gradient, as every other convolution
// runs it. Everything else is the same, in the same order.
TEST(CudnnStepOperations, InputGradientAddsTheStemsBackwardData) {
    for (const bool graph : {true, false}) {
        const Plan plain = plan_of(false), asked = plan_of(false, Storage::f32, true);
        LayerCalls layer;
        layer.graph_convolution = graph;
        layer.batchnorm = Calls::cudnn_ex;
        const std::vector<Operation> without =
            step_operations(plain, uniform_calls(plain, layer)).operations;
        const std::vector<Operation> with =
            step_operations(asked, uniform_calls(asked, layer)).operations;
        ASSERT_EQ(with.size(), without.size() + 1);
        size_t extra = 0;
        while (extra < without.size() && with[extra] == without[extra]) ++extra;
        ASSERT_LT(extra, with.size());
        const Operation& o = with[extra];
        ASSERT_GE(o.layer, 0);
        const LayerPlan& stem = asked.layers()[size_t(o.layer)];
        EXPECT_EQ(stem.kind, HB_LAYER_CONV2D);
        EXPECT_EQ(stem.inputs[0], asked.input());
        EXPECT_EQ(o, (Operation{o.layer, HB_PHASE_BACKWARD_DATA,
                                graph ? op::cudnn_graph : op::convolution_backward_data}));
        EXPECT_EQ(with[extra + 1].layer, o.layer);
        EXPECT_EQ(with[extra + 1].phase, HB_PHASE_BACKWARD_WEIGHTS);
        for (size_t i = extra; i < without.size(); ++i) EXPECT_EQ(with[i + 1], without[i]);
    }
}

TEST(CudnnStepOperations, NeedsEveryLayersCalls) {
    const Plan plan = plan_of(false);
    StepCalls calls;
    calls.layers.resize(plan.layers().size() - 1);
    EXPECT_THROW(step_operations(plan, calls), hb::Error);
}

}  // namespace
