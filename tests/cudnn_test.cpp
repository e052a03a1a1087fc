// The cuDNN backend's host-side logic, on the CPU: option parsing, the liveness-based arena plan,
// the step plan of a small stacked hourglass (fusions, gradient accumulation, buffer lifetimes),
// and the per-element arithmetic of its own kernels against the reference backend.
#include "arena_plan.hpp"
#include "data/initial_state.hpp"
#include "hb/plugin.hpp"
#include "kernel_math.hpp"
#include "layers.hpp"
#include "model/hourglass.hpp"
#include "optimizer.hpp"
#include "options.hpp"
#include "plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace cudnn_backend;

harness::model::HourglassSpec small_spec() {
    harness::model::HourglassSpec spec;
    spec.stacks = 2;
    spec.features = 32;
    spec.depth = 2;
    spec.joints = 4;
    spec.input_size = 64;
    spec.batch = 2;
    return spec;
}

struct Problem {
    harness::model::Graph graph = harness::model::build_hourglass(small_spec());
    harness::model::AbiGraph abi{graph};
};

const Problem& problem() {
    static const Problem p;
    return p;
}

hb_optimizer torch_rmsprop() {
    hb_optimizer o{};
    o.variant = HB_RMSPROP_TORCH;
    o.learning_rate = 2.5e-4f;
    o.alpha = 0.99f;
    o.eps = 1e-8f;
    return o;
}

hb_status status_of(const std::vector<hb_option>& options, const char* device = "cuda:0") {
    const hb_optimizer o = torch_rmsprop();
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

TEST(CudnnOptions, DefaultsAndValues) {
    const hb_optimizer o = torch_rmsprop();
    std::vector<hb_option> options = {
        {"math", "tf32"}, {"layout", "nhwc"}, {"fused_bn_relu", "true"}, {"cuda_graphs", "1"}};
    hb_session_desc desc{};
    desc.struct_size = sizeof(desc);
    desc.graph = problem().abi.get();
    desc.optimizer = &o;
    desc.device = "cuda:3";
    desc.placement = HB_PLACEMENT_HOST;
    desc.num_options = 4;
    desc.options = options.data();
    const Settings s = parse_settings(desc);
    EXPECT_EQ(s.math, Math::tf32);
    EXPECT_EQ(s.layout, Layout::nhwc);
    EXPECT_TRUE(s.fused_bn_relu);
    EXPECT_TRUE(s.cuda_graphs);
    EXPECT_EQ(s.device, 3);
    EXPECT_EQ(s.placement, HB_PLACEMENT_HOST);

    desc.num_options = 0;
    const Settings d = parse_settings(desc);
    EXPECT_EQ(d.math, Math::fp32);
    EXPECT_EQ(d.layout, Layout::nchw);
    EXPECT_FALSE(d.fused_bn_relu);
    EXPECT_FALSE(d.cuda_graphs);
}

TEST(CudnnOptions, Rejections) {
    EXPECT_EQ(status_of({{"math", "bf16"}}), HB_UNSUPPORTED);
    EXPECT_EQ(status_of({{"math", "fp64"}}), HB_UNSUPPORTED);
    EXPECT_EQ(status_of({{"layout", "chwn"}}), HB_UNSUPPORTED);
    EXPECT_EQ(status_of({{"cuda_graph", "true"}}), HB_UNSUPPORTED);
    EXPECT_EQ(status_of({{"fused_bn_relu", "maybe"}}), HB_UNSUPPORTED);
    EXPECT_EQ(status_of({}, "cpu"), HB_UNAVAILABLE);
    EXPECT_EQ(status_of({}, "cuda:x"), HB_UNAVAILABLE);
    EXPECT_EQ(status_of({}, "cuda"), HB_OK);
    EXPECT_EQ(parse_device("cuda:12"), 12);
}

TEST(CudnnArena, ReusesMemoryOfDeadBuffers) {
    const std::vector<BufferRequest> r = {
        {1000, 0, 1, "a"}, {1000, 2, 3, "b"}, {100, 1, 2, "c"}, {10, 0, 3, "d"}};
    const ArenaPlan plan = plan_arena(r, 256);
    EXPECT_EQ(find_conflict(r, plan), std::make_pair(-1, -1));
    EXPECT_EQ(plan.offsets[0], plan.offsets[1]);  // a and b are never live together
    for (int64_t o : plan.offsets) EXPECT_EQ(o % 256, 0);
    EXPECT_EQ(plan.bytes, 1024 + 256 + 256);
    EXPECT_EQ(plan.requested_bytes, 2110);
}

TEST(CudnnArena, RandomRequestsNeverOverlapWhileLive) {
    std::mt19937 rng(7);
    for (int round = 0; round < 20; ++round) {
        std::vector<BufferRequest> r;
        for (int i = 0; i < 200; ++i) {
            const int first = int(rng() % 100);
            r.push_back({int64_t(rng() % 100000), first, first + int(rng() % 30), "r"});
        }
        const ArenaPlan plan = plan_arena(r, 256);
        ASSERT_EQ(find_conflict(r, plan), std::make_pair(-1, -1));
        int64_t peak_live = 0;
        for (int t = 0; t < 130; ++t) {
            int64_t live = 0;
            for (const auto& q : r)
                if (q.first <= t && t <= q.last) live += q.bytes;
            peak_live = std::max(peak_live, live);
        }
        EXPECT_GE(plan.bytes, peak_live);
        EXPECT_LE(plan.bytes, plan.requested_bytes + 256 * 200);
    }
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

TEST(CudnnPlan, RejectsBrokenGraphs) {
    hb_graph graph = *problem().abi.get();
    std::vector<hb_layer> layers(graph.layers, graph.layers + graph.num_layers);
    layers[0].kernel = 5;  // the stem convolution's weight is 7x7
    graph.layers = layers.data();
    EXPECT_THROW(Plan{graph}, hb::Error);
}

TEST(CudnnKernelMath, RmsPropMatchesReference) {
    reference::ThreadPool pool(1);
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (int variant = 0; variant < 2; ++variant)
        for (float momentum : {0.0f, 0.9f})
            for (float decay : {0.0f, 1e-4f}) {
                hb_optimizer o = torch_rmsprop();
                o.variant = variant ? HB_RMSPROP_TENSORFLOW : HB_RMSPROP_TORCH;
                o.momentum = momentum;
                o.weight_decay = decay;
                o.initial_square_average = variant ? 1.0f : 0.0f;
                const int n = 1000;
                std::vector<float> p(n), g(n);
                for (int i = 0; i < n; ++i) p[i] = u(rng), g[i] = u(rng);
                std::vector<float> mine = p;
                auto state = reference::make_rmsprop_state<float>(o, n);
                std::vector<float> v(n, o.initial_square_average), b(n, 0.0f);
                math::RmsPropParams params;
                params.learning_rate = o.learning_rate;
                params.alpha = o.alpha;
                params.eps = o.eps;
                params.momentum = o.momentum;
                params.weight_decay = o.weight_decay;
                params.torch = o.variant == HB_RMSPROP_TORCH;
                for (int step = 0; step < 3; ++step) {
                    reference::rmsprop_update(pool, o, n, p.data(), g.data(), state);
                    for (int i = 0; i < n; ++i)
                        math::rmsprop_element(params, mine[i], g[i], v[i], b[i]);
                }
                for (int i = 0; i < n; ++i) {
                    ASSERT_EQ(mine[i], p[i]) << i;
                    ASSERT_EQ(v[i], state.square_average[i]) << i;
                }
            }
}

TEST(CudnnKernelMath, MseGradientMatchesReference) {
    reference::ThreadPool pool(1);
    const int n = 257;
    std::vector<float> y(n), t(n), expected(n, 0.0f);
    for (int i = 0; i < n; ++i) y[i] = 0.01f * float(i % 17), t[i] = 0.02f * float(i % 5);
    reference::mse_loss_backward(pool, n, y.data(), t.data(), 0.5, expected.data());
    const float scale = math::mse_gradient_scale(0.5, n);
    for (int i = 0; i < n; ++i) EXPECT_EQ(math::mse_gradient(y[i], t[i], scale), expected[i]);
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += math::squared_difference(y[i], t[i]);
    EXPECT_DOUBLE_EQ(0.5 * sum / n, reference::mse_loss_forward(n, y.data(), t.data(), 0.5));
}

TEST(CudnnKernelMath, MaxPoolGradientGoesToFirstMaximum) {
    EXPECT_EQ(math::first_max_position(1, 1, 1, 1), 0);
    EXPECT_EQ(math::first_max_position(0, 2, 2, 1), 1);
    EXPECT_EQ(math::first_max_position(0, 1, 2, 2), 2);
    EXPECT_EQ(math::first_max_position(0, 1, 2, 3), 3);
    // Against the reference on data full of ties, including odd sizes.
    reference::ThreadPool pool(1);
    const reference::Dims d{2, 3, 7, 6};
    std::vector<float> x(size_t(d.elements())), dy(size_t(d.n * d.c * 3 * 3)), dx(x.size(), 0.0f);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float((i * 7) % 3);
    for (size_t i = 0; i < dy.size(); ++i) dy[i] = float(i + 1);
    reference::maxpool2d_backward(pool, d, x.data(), dy.data(), dx.data());
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
    reference::ThreadPool pool(1);
    const reference::Dims d{1, 2, 3, 4};
    std::vector<float> dy(size_t(4 * d.elements())), dx(size_t(d.elements()), 0.0f);
    for (size_t i = 0; i < dy.size(); ++i) dy[i] = 0.1f * float(i) + 1.0f / float(i + 3);
    reference::upsample_backward(pool, d, dy.data(), dx.data());
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

}  // namespace
