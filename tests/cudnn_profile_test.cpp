// The cuDNN backend's per-operation profiling, on the host (docs/design.md §3 "Profiling"): the
// operations a step enqueues and their phases (step_operations, from the plan of a small stacked
// hourglass and the calls setup chose), and how OperationTimes pairs the marks of a clock into
// events, sizes the clock's pool once, stands for a replayed graph and refuses a step that strays
// from its list, on a fake clock.
#include "hb/profile.hpp"
#include "model/graph.hpp"
#include "model/hourglass.hpp"
#include "operation_times.hpp"
#include "operations.hpp"
#include "plan.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace hb_cudnn;

// Two stacks of depth 2, as the other cudnn tests plan them.
struct Problem {
    harness::model::Graph graph = [] {
        harness::model::HourglassSpec spec;
        spec.stacks = 2;
        spec.features = 32;
        spec.depth = 2;
        spec.joints = 4;
        spec.input_size = 64;
        spec.batch = 2;
        return harness::model::build_hourglass(spec);
    }();
    harness::model::AbiGraph abi{graph};
};

const Problem& problem() {
    static const Problem p;
    return p;
}

// A plan with every fusion candidate fused, or none; with the input's gradient when asked.
Plan plan_of(bool fused, Storage storage = Storage::f32, bool input_gradient = false) {
    const hb_graph& g = *problem().abi.get();
    std::set<int> fuse;
    if (fused)
        for (int l : fusion_candidates(g)) fuse.insert(l);
    return Plan(g, fuse, storage, input_gradient);
}

// Every layer with the same calls.
StepCalls uniform_calls(const Plan& plan, const LayerCalls& layer) {
    StepCalls calls;
    calls.layers.assign(plan.layers().size(), layer);
    return calls;
}

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

// ------------------------------------------------------------------------ OperationTimes

// Marks on a simulated stream: each record takes the stream's time, which advances by 1 ms per
// mark; reserve keeps count of its calls and of the marks it created.
struct FakeClock : MarkClock {
    void reserve(size_t marks) override {
        ++reserves;
        while (created < marks) ++created;
    }
    void record(size_t mark) override {
        if (mark >= created) throw std::logic_error("mark " + std::to_string(mark) + " unreserved");
        times[mark] = now;
        now += 1;
        recorded.push_back(mark);
    }
    double elapsed_ms(size_t from, size_t to) const override {
        return times.at(to) - times.at(from);
    }

    int reserves = 0;
    size_t created = 0;
    double now = 100;
    std::map<size_t, double> times;
    std::vector<size_t> recorded;
};

StepOperations three_operations(size_t graph_begin = 0, size_t graph_end = 3) {
    StepOperations s;
    s.operations = {{-1, HB_PHASE_TRANSFER, op::memcpy_host_to_device},
                    {4, HB_PHASE_FORWARD, op::cudnn_graph},
                    {-1, HB_PHASE_UPDATE, op::rmsprop}};
    s.graph_begin = graph_begin;
    s.graph_end = graph_end;
    return s;
}

struct Timed {
    FakeClock* clock;
    OperationTimes times;
};

Timed timed(StepOperations operations) {
    auto clock = std::make_unique<FakeClock>();
    FakeClock* c = clock.get();
    return {c, OperationTimes(std::move(operations), std::move(clock))};
}

// Runs `operations` as the step would, each enqueueing nothing but a count.
int run_all(OperationTimes& times, const std::vector<Operation>& operations) {
    int enqueued = 0;
    for (const Operation& o : operations) times.run(o, [&] { ++enqueued; });
    return enqueued;
}

TEST(CudnnOperationTimes, SizesThePoolOnceForEveryStep) {
    Timed t = timed(three_operations());
    EXPECT_EQ(t.times.marks(), 7u);
    EXPECT_EQ(t.clock->reserves, 1);
    EXPECT_EQ(t.clock->created, 7u);
    hb::EventLog log;
    log.set_enabled(true);
    for (int step = 0; step < 3; ++step) {
        t.clock->recorded.clear();
        log.begin_step();
        t.times.begin_step(true);
        EXPECT_EQ(run_all(t.times, three_operations().operations), 3);
        t.times.finish(log, "stream 0");
        // the same marks, in step order, every step
        EXPECT_EQ(t.clock->recorded, (std::vector<size_t>{0, 1, 2, 3, 4, 5, 6}));
        EXPECT_EQ(log.events().size(), 3u);
    }
    EXPECT_EQ(t.clock->reserves, 1);
    EXPECT_EQ(t.clock->created, 7u);
}

TEST(CudnnOperationTimes, PairsMarksIntoEventsFromTheStepsStart) {
    Timed t = timed(three_operations());
    hb::EventLog log;
    log.set_enabled(true);
    log.begin_step();
    t.times.begin_step(true);
    run_all(t.times, three_operations().operations);
    t.times.finish(log, "stream 0");
    const auto& e = log.events();
    ASSERT_EQ(e.size(), 3u);
    // Mark 0 at 100 ms; operation i between marks 2i+1 and 2i+2, one millisecond apart.
    for (size_t i = 0; i < e.size(); ++i) {
        EXPECT_DOUBLE_EQ(e[i].start_ms, double(2 * i + 1));
        EXPECT_DOUBLE_EQ(e[i].end_ms, double(2 * i + 2));
        EXPECT_STREQ(e[i].track, "stream 0");
        if (i > 0) {
            EXPECT_GE(e[i].start_ms, e[i - 1].end_ms);
        }
    }
    EXPECT_STREQ(e[1].name, "cudnn graph");
    EXPECT_EQ(e[1].layer, 4);
    EXPECT_EQ(e[1].phase, HB_PHASE_FORWARD);
    EXPECT_EQ(e[0].phase, HB_PHASE_TRANSFER);
    EXPECT_EQ(e[2].phase, HB_PHASE_UPDATE);
    EXPECT_EQ(e[2].layer, -1);
}

TEST(CudnnOperationTimes, UnprofiledStepRecordsNothing) {
    Timed t = timed(three_operations());
    hb::EventLog log;
    log.begin_step();
    t.times.begin_step(false);
    EXPECT_FALSE(t.times.active());
    // Unprofiled, the operations are not checked against the list either.
    EXPECT_EQ(run_all(t.times, {{7, HB_PHASE_OTHER, "anything"}, {8, HB_PHASE_OTHER, "else"}}), 2);
    t.times.replay_graph();
    t.times.finish(log, "stream 0");
    EXPECT_TRUE(t.clock->recorded.empty());
    EXPECT_TRUE(log.events().empty());
}

TEST(CudnnOperationTimes, UnpreparedRunsUnprofiledOnly) {
    OperationTimes times;
    EXPECT_FALSE(times.prepared());
    times.begin_step(false);
    int enqueued = 0;
    times.run({0, HB_PHASE_FORWARD, op::relu_forward}, [&] { ++enqueued; });
    EXPECT_EQ(enqueued, 1);
    EXPECT_THROW(times.begin_step(true), hb::Error);
    EXPECT_THROW(OperationTimes(three_operations(), nullptr), hb::Error);
    EXPECT_THROW(timed(three_operations(2, 1)), hb::Error);
    EXPECT_THROW(timed(three_operations(0, 4)), hb::Error);
}

TEST(CudnnOperationTimes, RefusesAStepThatStraysFromItsList) {
    Timed t = timed(three_operations());
    hb::EventLog log;
    log.set_enabled(true);
    t.times.begin_step(true);
    t.times.run(three_operations().operations[0], [] {});
    try {
        t.times.run({4, HB_PHASE_BACKWARD_DATA, op::cudnn_graph}, [] {});
        ADD_FAILURE() << "a wrong operation was accepted";
    } catch (const hb::Error& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("layer 4 backward_data cudnn graph"), std::string::npos) << message;
        EXPECT_NE(message.find("layer 4 forward cudnn graph"), std::string::npos) << message;
    }
    // A step that ends early has no events.
    t.times.begin_step(true);
    t.times.run(three_operations().operations[0], [] {});
    EXPECT_THROW(t.times.finish(log, "stream 0"), hb::Error);
    // Nor may a step run more than its list.
    t.times.begin_step(true);
    run_all(t.times, three_operations().operations);
    EXPECT_THROW(t.times.run({-1, HB_PHASE_OTHER, "more"}, [] {}), hb::Error);
    // A step that threw ends without events, and nothing is expected of what follows.
    t.times.end_step();
    EXPECT_FALSE(t.times.active());
    EXPECT_EQ(run_all(t.times, {{9, HB_PHASE_OTHER, "later"}}), 1);
}

// A captured step: the first profiled step captures the graph (its operations run, their marks
// become the graph's nodes); later ones replay it, which records the same marks again.
TEST(CudnnOperationTimes, ReplayedGraphStandsForItsOperations) {
    StepOperations s = three_operations(1, 2);  // the copy before the graph, the update after
    Timed t = timed(s);
    hb::EventLog log;
    log.set_enabled(true);

    log.begin_step();
    t.times.begin_step(true);
    run_all(t.times, s.operations);  // eager, or captured
    t.times.finish(log, "stream 0");
    ASSERT_EQ(log.events().size(), 3u);

    t.clock->recorded.clear();
    log.begin_step();
    t.times.begin_step(true);
    t.times.run(s.operations[0], [] {});
    // The replay records the graph's marks on the stream.
    t.clock->record(3);
    t.clock->record(4);
    t.times.replay_graph();
    t.times.run(s.operations[2], [] {});
    t.times.finish(log, "stream 0");
    EXPECT_EQ(t.clock->recorded, (std::vector<size_t>{0, 1, 2, 3, 4, 5, 6}));
    const auto& e = log.events();
    ASSERT_EQ(e.size(), 3u);
    EXPECT_EQ(e[1].layer, 4);
    EXPECT_DOUBLE_EQ(e[1].start_ms, 3);
    EXPECT_DOUBLE_EQ(e[1].end_ms, 4);

    // The replay must come where the graph's operations begin.
    t.times.begin_step(true);
    EXPECT_THROW(t.times.replay_graph(), hb::Error);
}

// The whole step of the small hourglass through OperationTimes, as a profiled step runs it:
// every convolution has its forward, its input gradient (but the image's) and its weight
// gradient, and the events follow one another on the track.
TEST(CudnnOperationTimes, ProfiledHourglassStep) {
    const Plan plan = plan_of(true);
    LayerCalls layer;
    layer.graph_convolution = true;
    layer.batchnorm = Calls::cudnn_ex;
    const StepOperations step = step_operations(plan, uniform_calls(plan, layer));
    Timed t = timed(step);
    EXPECT_EQ(t.clock->created, 2 * step.operations.size() + 1);
    hb::EventLog log;
    log.set_enabled(true);
    log.begin_step();
    t.times.begin_step(true);
    run_all(t.times, step.operations);
    t.times.finish(log, "stream 0");
    const auto& events = log.events();
    ASSERT_EQ(events.size(), step.operations.size());
    std::map<int, std::set<hb_phase>> phases;
    for (size_t i = 0; i < events.size(); ++i) {
        const hb_event& e = events[i];
        EXPECT_GE(e.layer, -1);
        EXPECT_LT(e.layer, int32_t(plan.layers().size()));
        EXPECT_LT(e.start_ms, e.end_ms);
        if (i > 0) {
            EXPECT_GE(e.start_ms, events[i - 1].end_ms);
        }
        phases[e.layer].insert(e.phase);
    }
    for (size_t l = 0; l < plan.layers().size(); ++l) {
        const LayerPlan& p = plan.layers()[l];
        if (p.kind != HB_LAYER_CONV2D) continue;
        std::set<hb_phase> expected{HB_PHASE_FORWARD, HB_PHASE_BACKWARD_WEIGHTS};
        if (p.inputs[0] != plan.input()) expected.insert(HB_PHASE_BACKWARD_DATA);
        EXPECT_EQ(phases[int(l)], expected) << p.name;
    }
    EXPECT_EQ(phases[-1], (std::set<hb_phase>{HB_PHASE_UPDATE, HB_PHASE_TRANSFER}));
}

}  // namespace
