// How OperationTimes pairs the marks of a clock into events, sizes the clock's pool once, stands
// for a replayed graph and refuses a step that strays from its list, on a fake clock.
#include "cudnn_small_hourglass.hpp"
#include "hb/error.hpp"
#include "hb/profile.hpp"
#include "operation_times.hpp"
#include "operations.hpp"
#include "plan.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace hb_cudnn;
using namespace cudnn_host_test;

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
