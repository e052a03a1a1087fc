// The LibTorch plugin's per-operation profiling through its C ABI: a profiled step is the same
// step, with valid events of every layer, on the CPU and on a CUDA stream; and what it costs.
#include "hb/profile.hpp"
#include "libtorch_session.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace libtorch_test;

// ------------------------------------------------------------------ per-operation profiling

std::vector<hb_event> read_events(PluginSession& session) {
    const hb_event* events = nullptr;
    int32_t count = -1;
    uint32_t size = 0;
    EXPECT_EQ(plugin_api().read_events(session.get(), &events, &count, &size), HB_OK)
        << plugin_api().session_error(session.get());
    EXPECT_EQ(size, sizeof(hb_event));
    return count > 0 ? std::vector<hb_event>(events, events + count) : std::vector<hb_event>{};
}

void set_profiling(PluginSession& session, bool on) {
    ASSERT_EQ(plugin_api().set_profiling(session.get(), on ? 1 : 0), HB_OK)
        << plugin_api().session_error(session.get());
}

// A session of `setup` with the state and batches loaded.
struct ReadySession : PluginSession {
    explicit ReadySession(const SessionSetup& setup) : PluginSession(setup) {
        if (status() != HB_OK) throw std::runtime_error("create_session: " + error());
        const Problem& p = *setup.problem;
        load_state(harness::testing::pointers(p.state).data());
        set_batches(static_cast<int32_t>(p.batches.inputs.size()),
                    harness::testing::pointers(p.batches.inputs).data(),
                    harness::testing::pointers(p.batches.targets).data());
    }
};

struct TimedStep {
    double loss = 0;
    double wall_ms = 0;  // steady_clock around the call, as the harness times a step
};

TimedStep timed_step(PluginSession& session, int32_t batch) {
    const auto start = std::chrono::steady_clock::now();
    const hb::StepResult r = session.step(batch);
    const auto end = std::chrono::steady_clock::now();
    return {r.loss, std::chrono::duration<double, std::milli>(end - start).count()};
}

// What docs/design.md §3 asks of a profiled step's events: valid layers, names and tracks; on
// each track, events in order that never overlap, within the step's wall time; every
// convolution with a forward and a backward event; an update. HB_PRINT_EVENTS=1 prints them.
void expect_valid_profile(const Graph& graph, const std::vector<hb_event>& events, double wall_ms) {
    ASSERT_FALSE(events.empty());
    if (std::getenv("HB_PRINT_EVENTS"))
        for (const hb_event& e : events)
            std::printf("%-40s %4d %-16s %-10s %9.3f %9.3f\n", e.name, e.layer,
                        hb::to_string(e.phase), e.track, e.start_ms, e.end_ms);
    std::map<std::string, double> track_end;
    std::map<int32_t, std::map<hb_phase, int>> phases;
    int updates = 0;
    for (const hb_event& e : events) {
        ASSERT_NE(e.name, nullptr);
        ASSERT_NE(e.track, nullptr);
        const std::string what = std::string(e.name) + " on " + e.track;
        EXPECT_GE(e.layer, -1) << what;
        EXPECT_LT(e.layer, static_cast<int32_t>(graph.layers.size())) << what;
        EXPECT_GE(e.phase, HB_PHASE_FORWARD) << what;
        EXPECT_LE(e.phase, HB_PHASE_OTHER) << what;
        EXPECT_GE(e.start_ms, 0) << what;
        EXPECT_LE(e.start_ms, e.end_ms) << what;
        EXPECT_LE(e.end_ms, wall_ms) << what;
        auto [it, first] = track_end.emplace(e.track, e.end_ms);
        if (!first) {
            EXPECT_GE(e.start_ms, it->second) << what << " overlaps the event before it";
            it->second = e.end_ms;
        }
        ++phases[e.layer][e.phase];
        updates += e.phase == HB_PHASE_UPDATE;
    }
    EXPECT_GT(updates, 0);
    for (size_t l = 0; l < graph.layers.size(); ++l) {
        if (graph.layers[l].kind != harness::model::LayerKind::conv2d) continue;
        const auto layer = static_cast<int32_t>(l);
        EXPECT_GT(phases[layer][HB_PHASE_FORWARD], 0) << graph.layers[l].name;
        EXPECT_GT(phases[layer][HB_PHASE_BACKWARD], 0) << graph.layers[l].name;
    }
}

TEST(LibTorchProfile, AnnouncesProfilingAndStartsWithoutEvents) {
    EXPECT_NE(plugin_info().capabilities & HB_CAP_PROFILE, 0u);
    ASSERT_NE(plugin_api().set_profiling, nullptr);
    ASSERT_NE(plugin_api().read_events, nullptr);
    ReadySession session(cpu_setup(rmsprop(HB_RMSPROP_TORCH), false));
    EXPECT_TRUE(read_events(session).empty());
    session.step(0);
    EXPECT_TRUE(read_events(session).empty()) << "a step without profiling has no events";
}

struct ProfileCase {
    const char* name;
    bool channels_last, foreach;
    hb_placement placement;
};
void PrintTo(const ProfileCase& c, std::ostream* out) {
    *out << c.name;
}

class LibTorchProfile : public ::testing::TestWithParam<ProfileCase> {};

TEST_P(LibTorchProfile, AProfiledStepIsTheSameStepWithEventsOfEveryLayer) {
    SessionSetup setup = cpu_setup(rmsprop(HB_RMSPROP_TORCH), GetParam().channels_last);
    setup.options.emplace_back("foreach", GetParam().foreach ? "true" : "false");
    setup.placement = GetParam().placement;
    const Graph& graph = setup.problem->graph;
    ReadySession profiled(setup), plain(setup);
    // The first step unprofiled in both; then the same steps with and without profiling.
    EXPECT_EQ(timed_step(profiled, 0).loss, timed_step(plain, 0).loss);
    set_profiling(profiled, true);
    for (int32_t step = 1; step <= 2; ++step) {
        SCOPED_TRACE("step " + std::to_string(step));
        const TimedStep t = timed_step(profiled, step % 2);
        EXPECT_EQ(t.loss, timed_step(plain, step % 2).loss) << "profiling changed the step";
        const std::vector<hb_event> events = read_events(profiled);
        expect_valid_profile(graph, events, t.wall_ms);
        // On the CPU every operation runs on the step's thread; the backward pass too.
        for (const hb_event& e : events) EXPECT_STREQ(e.track, "main") << e.name;
        std::map<hb_phase, int> count;
        for (const hb_event& e : events) ++count[e.phase];
        EXPECT_GT(count[HB_PHASE_LOSS], 0) << "the loss sum and the backward pass's seed";
        EXPECT_GT(count[HB_PHASE_BACKWARD_WEIGHTS], 0) << "AccumulateGrad";
        EXPECT_EQ(count[HB_PHASE_REORDER] > 0, setup.placement == HB_PLACEMENT_HOST)
            << "a host batch is copied into the step's tensors";
        EXPECT_EQ(count[HB_PHASE_TRANSFER], 0) << "nothing leaves host memory";
        // Updates per parameter carry its layer; the multi-tensor update is every layer's.
        for (const hb_event& e : events)
            if (e.phase == HB_PHASE_UPDATE) {
                if (GetParam().foreach)
                    EXPECT_EQ(e.layer, -1) << e.name;
                else
                    EXPECT_GE(e.layer, 0) << e.name;
            }
    }
    set_profiling(profiled, false);
    EXPECT_TRUE(read_events(profiled).empty());
    EXPECT_EQ(timed_step(profiled, 1).loss, timed_step(plain, 1).loss);
    EXPECT_TRUE(read_events(profiled).empty()) << "profiling off, a step has no events";
}

INSTANTIATE_TEST_SUITE_P(
    Cpu, LibTorchProfile,
    ::testing::Values(ProfileCase{"nchw", false, false, HB_PLACEMENT_DEVICE},
                      ProfileCase{"channels_last_foreach", true, true, HB_PLACEMENT_DEVICE},
                      ProfileCase{"host_placement", false, false, HB_PLACEMENT_HOST}),
    [](const ::testing::TestParamInfo<ProfileCase>& c) { return c.param.name; });

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// What profiling costs and how much of a step its events cover, on configs/cpu-ablation.yaml's
// network (hourglass2, batch 6, 256x256) with 2 threads, or with HB_PROFILE_NETWORK=small on the
// tests' small network with 1 thread (short operations, where the callbacks weigh most): a
// measurement, not a check, so it runs only when HB_PROFILE_MEASURE gives the number of rounds
// (one unprofiled and one profiled step each, after two warm-up steps):
//   HB_PROFILE_MEASURE=5 build/tests/libtorch_test --gtest_filter='*MeasuresItsCost*'
TEST(LibTorchProfile, MeasuresItsCost) {
    const char* rounds_text = std::getenv("HB_PROFILE_MEASURE");
    if (!rounds_text) GTEST_SKIP() << "a measurement: set HB_PROFILE_MEASURE=<rounds> to run it";
    const int rounds = std::max(1, std::atoi(rounds_text));
    const char* network = std::getenv("HB_PROFILE_NETWORK");
    const bool small = network && std::string(network) == "small";
    HourglassSpec spec;
    spec.stacks = 2;
    const std::unique_ptr<Problem> hourglass2 = small ? nullptr : std::make_unique<Problem>(spec);
    const Problem& problem = small ? small_problem() : *hourglass2;
    SessionSetup setup;
    setup.problem = &problem;
    setup.options = {{"threads", small ? "1" : "2"}};
    ReadySession session(setup);
    for (int32_t b = 0; b < 2; ++b) timed_step(session, b);
    std::vector<double> plain, profiled, covered, span;
    for (int r = 0; r < rounds; ++r) {
        set_profiling(session, false);
        plain.push_back(timed_step(session, 0).wall_ms);
        set_profiling(session, true);
        const TimedStep t = timed_step(session, 1);
        profiled.push_back(t.wall_ms);
        const std::vector<hb_event> events = read_events(session);
        expect_valid_profile(problem.graph, events, t.wall_ms);
        double sum = 0, first = INFINITY, last = 0;
        for (const hb_event& e : events) {
            sum += e.end_ms - e.start_ms;
            first = std::min(first, e.start_ms);
            last = std::max(last, e.end_ms);
        }
        covered.push_back(sum / t.wall_ms);
        span.push_back(sum / (last - first));
        std::printf(
            "round %d: unprofiled %.1f ms, profiled %.1f ms, %zu events, their sum %.1f ms "
            "(%.2f%% of the step, %.2f%% of first start to last end)\n",
            r, plain.back(), t.wall_ms, events.size(), sum, 100 * covered.back(),
            100 * span.back());
    }
    std::printf(
        "median: unprofiled %.1f ms, profiled %.1f ms (%+.2f%%); events cover %.2f%% of "
        "the profiled step\n",
        median(plain), median(profiled), 100 * (median(profiled) / median(plain) - 1),
        100 * median(covered));
}

// ------------------------------------------------------------------------------------- CUDA

TEST(LibTorchCuda, AProfiledStepIsTimedOnTheStream) {
    SKIP_WITHOUT_CUDA();
    for (hb_placement placement : {HB_PLACEMENT_DEVICE, HB_PLACEMENT_HOST}) {
        SCOPED_TRACE(placement == HB_PLACEMENT_HOST ? "host placement" : "device placement");
        SessionSetup setup = cuda_setup({{"cudnn_benchmark", "false"}});
        setup.placement = placement;
        ReadySession profiled(setup), plain(setup);
        // cuDNN's weight gradients may add in any order: the same step to rounding.
        auto near = [](double a, double b) { return std::fabs(a - b) <= 1e-4 * std::fabs(b); };
        EXPECT_TRUE(near(timed_step(profiled, 0).loss, timed_step(plain, 0).loss));
        set_profiling(profiled, true);
        // The second profiled step reuses the first one's events.
        for (int32_t step = 1; step <= 2; ++step) {
            const TimedStep t = timed_step(profiled, step % 2);
            EXPECT_TRUE(near(t.loss, timed_step(plain, step % 2).loss)) << "step " << step;
            const std::vector<hb_event> events = read_events(profiled);
            expect_valid_profile(setup.problem->graph, events, t.wall_ms);
            int transfers = 0;
            for (const hb_event& e : events) {
                EXPECT_EQ(std::string(e.track).rfind("stream ", 0), 0u) << e.track;
                transfers += e.phase == HB_PHASE_TRANSFER;
            }
            // The loss read back, and in host placement the batch's upload.
            EXPECT_GE(transfers, placement == HB_PLACEMENT_HOST ? 2 : 1);
        }
        set_profiling(profiled, false);
        timed_step(profiled, 0);
        EXPECT_TRUE(read_events(profiled).empty());
    }
}

TEST(LibTorchCuda, ProfilingACapturedStepIsRefusedNamingTheOption) {
    SKIP_WITHOUT_CUDA();
    PluginSession session(cuda_setup({{"cuda_graphs", "true"}}));
    ASSERT_EQ(session.status(), HB_OK) << session.error();
    EXPECT_EQ(plugin_api().set_profiling(session.get(), 1), HB_UNSUPPORTED);
    EXPECT_NE(std::string(plugin_api().session_error(session.get())).find("cuda_graphs"),
              std::string::npos);
    EXPECT_EQ(plugin_api().set_profiling(session.get(), 0), HB_OK);
}

}  // namespace
