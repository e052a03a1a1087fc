// The events of the cuDNN plugin's profiled steps (docs/design.md §3 "Profiling"): eager, captured
// and replayed, the same every time, with the loss of the unprofiled steps.
#include "backend_comparison.hpp"
#include "cudnn_gpu_session.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace cudnn_test;
using harness::testing::rmsprop;

// The last step's events, copied out at the plugin's event size.
std::vector<hb_event> read_events(harness::testing::AbiSession& session) {
    const hb_event* events = nullptr;
    int32_t count = 0;
    uint32_t size = 0;
    if (plugin_api().read_events(session.get(), &events, &count, &size) != HB_OK)
        throw std::runtime_error(std::string("read_events: ") +
                                 plugin_api().session_error(session.get()));
    std::vector<hb_event> out(size_t(std::max(count, 0)));
    for (size_t i = 0; i < out.size(); ++i)
        std::memcpy(&out[i], reinterpret_cast<const char*>(events) + i * size,
                    std::min<size_t>(size, sizeof(hb_event)));
    return out;
}

struct TimedStep {
    double loss = 0;
    double wall_ms = 0;  // the host's time around the call
    std::vector<hb_event> events;
};

// From the start state, so that every step computes the same loss: the loss of a step is its
// forward's, which neither the optimizer state nor the running statistics change.
TimedStep step_from_start(harness::testing::AbiSession& session) {
    const auto& p = problem();
    session.load_state(harness::testing::pointers(p.state).data());
    const auto start = std::chrono::steady_clock::now();
    TimedStep t;
    t.loss = session.step(0).loss;
    t.wall_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    t.events = read_events(session);
    return t;
}

// What a profiled step's events must be: on the one stream's track, in step order without
// overlapping, within the step's time, each on a layer of the graph or none; every convolution
// with its forward, its weight gradient and (but the image's) its input gradient; the update.
void expect_profile(const TimedStep& step) {
    const harness::model::Graph& graph = problem().graph;
    const auto layers = static_cast<int32_t>(graph.layers.size());
    ASSERT_FALSE(step.events.empty());
    std::map<int32_t, std::set<hb_phase>> phases;
    double previous_end = 0;
    const double slack_ms = 1e-3;  // cudaEventElapsedTime's resolution is about 0.5 us
    for (const hb_event& e : step.events) {
        EXPECT_STREQ(e.track, "stream 0");
        EXPECT_NE(e.name, nullptr);
        EXPECT_GE(e.layer, -1);
        EXPECT_LT(e.layer, layers);
        EXPECT_GE(e.start_ms, previous_end - slack_ms) << e.name << " on layer " << e.layer;
        EXPECT_LE(e.start_ms, e.end_ms) << e.name << " on layer " << e.layer;
        EXPECT_LE(e.end_ms, step.wall_ms) << e.name << " on layer " << e.layer;
        previous_end = e.end_ms;
        phases[e.layer].insert(e.phase);
    }
    for (int32_t l = 0; l < layers; ++l) {
        const harness::model::Layer& layer = graph.layers[size_t(l)];
        if (layer.kind != harness::model::LayerKind::conv2d) continue;
        std::set<hb_phase> expected{HB_PHASE_FORWARD, HB_PHASE_BACKWARD_WEIGHTS};
        if (layer.inputs[0] != graph.input) expected.insert(HB_PHASE_BACKWARD_DATA);
        std::set<hb_phase> found;
        for (hb_phase phase : phases[l])
            if (phase != HB_PHASE_REORDER) found.insert(phase);  // bf16's widening
        EXPECT_EQ(found, expected) << layer.name;
    }
    EXPECT_EQ(phases[-1].count(HB_PHASE_UPDATE), 1u);
}

class CudnnProfile : public ::testing::TestWithParam<StepMode> {};

// Each profiled step from the same start, eagerly, captured and replayed where the mode captures
// the step: valid events, the same ones every time, and the loss of the unprofiled steps;
// unprofiled steps have none, before and after.
TEST_P(CudnnProfile, EventsOfAProfiledStep) {
    SKIP_WITHOUT_CUDA();
    const StepMode& s = GetParam();
    const hb_optimizer o = rmsprop(s.variant);
    std::vector<hb_option> options;
    harness::testing::AbiSession session(plugin_api(), describe_session(s, o, options, "cuda:0"));
    ASSERT_EQ(session.status(), HB_OK) << session.error();
    const auto& p = problem();
    session.load_state(harness::testing::pointers(p.state).data());
    set_problem_batches(session);

    // Unprofiled: eagerly, then (cuda_graphs) captured.
    const TimedStep eager = step_from_start(session);
    const TimedStep plain = step_from_start(session);
    EXPECT_TRUE(eager.events.empty());
    EXPECT_TRUE(plain.events.empty());
    EXPECT_DOUBLE_EQ(plain.loss, eager.loss);

    // Profiled: the first captures the profiled graph (cuda_graphs), the second replays it.
    set_profiling(session, true);
    const TimedStep first = step_from_start(session);
    const TimedStep second = step_from_start(session);
    for (const TimedStep* t : {&first, &second}) {
        expect_profile(*t);
        EXPECT_DOUBLE_EQ(t->loss, eager.loss);
    }
    ASSERT_EQ(first.events.size(), second.events.size());
    for (size_t i = 0; i < first.events.size(); ++i) {
        EXPECT_STREQ(first.events[i].name, second.events[i].name);
        EXPECT_EQ(first.events[i].layer, second.events[i].layer);
        EXPECT_EQ(first.events[i].phase, second.events[i].phase);
    }

    // Off again: the graph without events, and none read back.
    set_profiling(session, false);
    const TimedStep after = step_from_start(session);
    EXPECT_TRUE(after.events.empty());
    EXPECT_DOUBLE_EQ(after.loss, eager.loss);
}

// Eager steps with the graph API; a captured step copying its batch on the device; cuDNN's legacy
// calls with a fused batch norm; bf16's own kernels and conversions with host placement, captured.
INSTANTIATE_TEST_SUITE_P(Modes, CudnnProfile,
                         ::testing::Values(StepMode{"fp32_nchw", {}},
                                           StepMode{"graphs", {{"cuda_graphs", "true"}}},
                                           StepMode{"legacy_calls_nhwc",
                                                    {{"convolution_api", "legacy"},
                                                     {"batchnorm_api", "legacy"},
                                                     {"layout", "nhwc"},
                                                     {"fuse_batchnorm_relu", "true"}}},
                                           StepMode{"bf16_nhwc_fused_graphs",
                                                    {{"math", "bf16"},
                                                     {"layout", "nhwc"},
                                                     {"fuse_batchnorm_relu", "true"},
                                                     {"cuda_graphs", "true"}},
                                                    HB_PLACEMENT_HOST}),
                         [](const ::testing::TestParamInfo<StepMode>& mode) {
                             return mode.param.name;
                         });

}  // namespace
