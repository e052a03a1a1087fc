// The cuDNN backend's step plan of a small stacked hourglass, on the CPU: fusions, gradient
// accumulation, buffer lifetimes, the input's gradient on request and bf16 storage.
#include "cudnn_small_hourglass.hpp"
#include "hb/error.hpp"
#include "options.hpp"
#include "plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace {

using namespace hb_cudnn;
using namespace cudnn_host_test;

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

TEST(CudnnPlan, RejectsBrokenGraphs) {
    hb_graph graph = *problem().abi.get();
    std::vector<hb_layer> layers(graph.layers, graph.layers + graph.num_layers);
    layers[0].kernel = 5;  // the stem convolution's weight is 7x7
    graph.layers = layers.data();
    EXPECT_THROW(Plan{graph}, hb::Error);
}

}  // namespace
