// What the CPU backends' tests check of a profiled step (docs/design.md §3 "Profiling"): a step
// timed around the call with its events copied out, the rules every event list keeps (valid
// layers and phases, no overlap on a track, all within the step), and the phases each layer's
// events have, for the tests to hold against the layers of their graph.
#pragma once

#include "backend_comparison.hpp"
#include "hb/plugin.hpp"
#include "hb/profile.hpp"
#include "model/graph.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace harness::testing {

struct ProfiledStep {
    double loss = 0;
    double wall_ms = 0;            // steady_clock around step()
    std::vector<hb_event> events;  // names and tracks point into the session's log
};

// One step of `session` on `batch`, its events read right after it.
inline ProfiledStep timed_step(hb::Session& session, int32_t batch) {
    using Clock = std::chrono::steady_clock;
    ProfiledStep s;
    const auto start = Clock::now();
    s.loss = session.step(batch).loss;
    s.wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    s.events = session.events();
    return s;
}

// A session of `graph` loaded with the initial state and one batch of `seed`.
inline void load_problem(hb::Session& session, const model::Graph& graph, uint64_t seed) {
    const Tensors state = data::initial_state(graph, seed);
    const data::Batches batches = data::make_batches(graph, seed, 1);
    session.load_state(pointers(state).data());
    session.set_batches(1, pointers(batches.inputs).data(), pointers(batches.targets).data());
}

inline double event_sum_ms(const std::vector<hb_event>& events) {
    double sum = 0;
    for (const hb_event& e : events) sum += e.end_ms - e.start_ms;
    return sum;
}

// Every event names what ran and its track, belongs to a layer of the graph or to none, has a
// phase of the ABI, lies within [0, the step's time] and overlaps no other event of its track;
// and there is time in them.
inline void expect_well_formed(const std::vector<hb_event>& events, int num_layers,
                               double wall_ms) {
    ASSERT_FALSE(events.empty());
    std::map<std::string, std::vector<hb_event>> tracks;
    for (const hb_event& e : events) {
        ASSERT_NE(e.name, nullptr);
        ASSERT_NE(e.track, nullptr);
        const std::string what = std::string(e.name) + " of layer " + std::to_string(e.layer);
        EXPECT_STRNE(e.name, "") << what;
        EXPECT_GE(e.layer, -1) << what;
        EXPECT_LT(e.layer, num_layers) << what;
        EXPECT_GE(static_cast<int>(e.phase), HB_PHASE_FORWARD) << what;
        EXPECT_LE(static_cast<int>(e.phase), HB_PHASE_OTHER) << what;
        EXPECT_GE(e.start_ms, 0) << what;
        EXPECT_LE(e.start_ms, e.end_ms) << what;
        EXPECT_LE(e.end_ms, wall_ms) << what;
        tracks[e.track].push_back(e);
    }
    for (auto& [track, list] : tracks) {
        std::sort(list.begin(), list.end(),
                  [](const hb_event& a, const hb_event& b) { return a.start_ms < b.start_ms; });
        for (size_t i = 1; i < list.size(); ++i)
            EXPECT_GE(list[i].start_ms, list[i - 1].end_ms)
                << list[i].name << " of layer " << list[i].layer << " overlaps " << list[i - 1].name
                << " of layer " << list[i - 1].layer << " on " << track;
    }
    EXPECT_GT(event_sum_ms(events), 0);
}

// Per layer (index + 1: the first entry is layer -1), the phases of its events.
inline std::vector<std::set<hb_phase>> phases_by_layer(const std::vector<hb_event>& events,
                                                       int num_layers) {
    std::vector<std::set<hb_phase>> phases(static_cast<size_t>(num_layers) + 1);
    for (const hb_event& e : events)
        if (e.layer >= -1 && e.layer < num_layers)
            phases[static_cast<size_t>(e.layer + 1)].insert(e.phase);
    return phases;
}

// The phases every backend's events have for a layer, by its kind: a convolution's forward,
// weight gradient and, unless it reads the graph's input, input gradient; a batch norm's forward
// and its backward (with gamma and beta, one `backward`); a loss's forward and input gradient.
// The other kinds are the tests' to check, as a backend may absorb them into other layers.
inline void expect_layer_phases(const model::Graph& graph,
                                const std::vector<std::set<hb_phase>>& phases) {
    for (size_t l = 0; l < graph.layers.size(); ++l) {
        const model::Layer& layer = graph.layers[l];
        const std::set<hb_phase>& have = phases[l + 1];
        const bool reads_input = layer.inputs[0] == graph.input;
        std::set<hb_phase> want;
        switch (layer.kind) {
            case model::LayerKind::conv2d:
                want = {HB_PHASE_FORWARD, HB_PHASE_BACKWARD_WEIGHTS};
                if (!reads_input) want.insert(HB_PHASE_BACKWARD_DATA);
                break;
            case model::LayerKind::batchnorm:
                want = {HB_PHASE_FORWARD, HB_PHASE_BACKWARD};
                break;
            case model::LayerKind::mse_loss:
                want = {HB_PHASE_FORWARD, HB_PHASE_BACKWARD_DATA};
                break;
            default:
                continue;
        }
        for (hb_phase p : want)
            EXPECT_TRUE(have.count(p)) << layer.name << " has no " << hb::to_string(p) << " event";
        if (reads_input) {
            EXPECT_FALSE(have.count(HB_PHASE_BACKWARD_DATA)) << layer.name;
        }
    }
}

// Two sessions loaded alike, one profiled: two steps give the same losses and then the same state,
// bit for bit (profiling only reads a clock); profiling off again, the events stop.
inline void expect_profiling_changes_nothing(hb::Session& plain, hb::Session& profiled,
                                             const model::Graph& graph) {
    profiled.set_profiling(true);
    for (int k = 0; k < 2; ++k) {
        const auto a = timed_step(plain, 0);
        const auto b = timed_step(profiled, 0);
        EXPECT_TRUE(a.events.empty());
        EXPECT_FALSE(b.events.empty());
        EXPECT_EQ(a.loss, b.loss) << "step " << k;
    }
    Tensors after_plain(graph.tensors.size()), after_profiled(graph.tensors.size());
    std::vector<float*> a, b;
    for (size_t t = 0; t < graph.tensors.size(); ++t) {
        after_plain[t].resize(static_cast<size_t>(graph.tensors[t].elements()));
        after_profiled[t].resize(after_plain[t].size());
        a.push_back(after_plain[t].data());
        b.push_back(after_profiled[t].data());
    }
    plain.read_state(a.data());
    profiled.read_state(b.data());
    EXPECT_EQ(after_plain, after_profiled);

    profiled.set_profiling(false);
    EXPECT_TRUE(profiled.events().empty());
    EXPECT_TRUE(timed_step(profiled, 0).events.empty());
}

// A built plugin announces profiling, and its table's two calls work as the harness makes them:
// no events before set_profiling(1), then events of `event_size` bytes, none after
// set_profiling(0).
inline void expect_profiling_through_the_abi(const hb_plugin_api& api, const model::Graph& graph,
                                             const std::vector<hb_option>& options) {
    const hb_plugin_info* info = nullptr;
    ASSERT_EQ(api.describe(&info), HB_OK);
    EXPECT_TRUE(info->capabilities & HB_CAP_PROFILE);
    ASSERT_GE(api.struct_size, sizeof(hb_plugin_api));
    ASSERT_NE(api.set_profiling, nullptr);
    ASSERT_NE(api.read_events, nullptr);

    const model::AbiGraph abi(graph);
    const hb_optimizer optimizer = rmsprop();
    AbiSession session(api, session_desc(abi, optimizer, options));
    ASSERT_EQ(session.status(), HB_OK) << session.error();
    load_problem(session, graph, 5);
    const auto events_of_a_step = [&] {
        session.step(0);
        const hb_event* events = nullptr;
        int32_t count = -1;
        uint32_t size = 0;
        EXPECT_EQ(api.read_events(session.get(), &events, &count, &size), HB_OK);
        EXPECT_EQ(size, sizeof(hb_event));
        return count;
    };
    EXPECT_EQ(events_of_a_step(), 0);
    ASSERT_EQ(api.set_profiling(session.get(), 1), HB_OK);
    EXPECT_GT(events_of_a_step(), 0);
    ASSERT_EQ(api.set_profiling(session.get(), 0), HB_OK);
    EXPECT_EQ(events_of_a_step(), 0);
}

}  // namespace harness::testing
