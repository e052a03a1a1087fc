// The oneDNN backend's per-operation events: each primitive and loop an event of its layer, the
// unfused ReLUs' and the host placement's own, none unprofiled, and through the plugin's table.
#include "backend_comparison.hpp"
#include "loaded_plugin.hpp"
#include "model/hourglass.hpp"
#include "profile_events.hpp"
#include "test_paths.hpp"

// Both plugins have a session.hpp on the include path.
#include "../onednn/session.hpp"

#include <gtest/gtest.h>

#include <list>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace {

using harness::model::AbiGraph;
using harness::model::Graph;
using harness::model::LayerKind;
using harness::testing::rmsprop;

// A session of the tiny hourglass with one batch, one thread (the same bits in every session).
struct Profiled {
    const Graph graph = harness::model::build_hourglass(harness::testing::tiny_hourglass());
    const AbiGraph abi{graph};
    const hb_optimizer optimizer = rmsprop();

    std::unique_ptr<hb_onednn::Session> session(std::vector<hb_option> options = {},
                                                hb_placement placement = HB_PLACEMENT_DEVICE) {
        options_.push_back(std::move(options));
        options_.back().push_back({"threads", "1"});
        auto s = std::make_unique<hb_onednn::Session>(
            harness::testing::session_desc(abi, optimizer, options_.back(), "cpu", placement));
        harness::testing::load_problem(*s, graph, 5);
        return s;
    }

private:
    std::list<std::vector<hb_option>> options_;  // each session's, kept while it is created
};

int count_events(const std::vector<hb_event>& events, const std::string& name, hb_phase phase) {
    int n = 0;
    for (const hb_event& e : events) n += e.name == name && e.phase == phase;
    return n;
}

// The layers of `kind` in `graph`.
std::vector<int> layers_of(const Graph& graph, LayerKind kind) {
    std::vector<int> out;
    for (size_t l = 0; l < graph.layers.size(); ++l)
        if (graph.layers[l].kind == kind) out.push_back(static_cast<int>(l));
    return out;
}

TEST(OnednnProfile, EveryPrimitiveAndLoopIsAnEventOfItsLayer) {
    Profiled p;
    auto session = p.session();
    session->set_profiling(true);
    const auto step = harness::testing::timed_step(*session, 0);
    const int layers = static_cast<int>(p.graph.layers.size());
    harness::testing::expect_well_formed(step.events, layers, step.wall_ms);
    const auto phases = harness::testing::phases_by_layer(step.events, layers);
    harness::testing::expect_layer_phases(p.graph, phases);
    const std::set<hb_phase> forward_and_data = {HB_PHASE_FORWARD, HB_PHASE_BACKWARD_DATA};
    for (LayerKind kind : {LayerKind::maxpool2d, LayerKind::upsample})
        for (int l : layers_of(p.graph, kind))
            EXPECT_EQ(phases[static_cast<size_t>(l) + 1], forward_and_data)
                << p.graph.layers[static_cast<size_t>(l)].name;
    // Every ReLU of the hourglass follows a batch norm, which runs it: its events are the batch
    // norm's.
    for (int l : layers_of(p.graph, LayerKind::relu))
        EXPECT_TRUE(phases[static_cast<size_t>(l) + 1].empty())
            << p.graph.layers[static_cast<size_t>(l)].name;
    // One RMSProp pass over every parameter, belonging to no layer; reorders serve a layer.
    EXPECT_EQ(count_events(step.events, "rmsprop update", HB_PHASE_UPDATE), 1);
    EXPECT_EQ(phases[0], std::set<hb_phase>({HB_PHASE_UPDATE, HB_PHASE_LOSS}));
    for (const hb_event& e : step.events) {
        if (std::string(e.name) != "reorder") continue;
        EXPECT_EQ(e.phase, HB_PHASE_REORDER);
        EXPECT_GE(e.layer, 0);
    }
    EXPECT_EQ(count_events(step.events, "batch staging", HB_PHASE_TRANSFER), 0);
}

TEST(OnednnProfile, UnfusedReluLayersAndHostPlacementHaveTheirOwnEvents) {
    Profiled p;
    auto session = p.session({{"fuse_batchnorm_relu", "false"}}, HB_PLACEMENT_HOST);
    session->set_profiling(true);
    const auto step = harness::testing::timed_step(*session, 0);
    const int layers = static_cast<int>(p.graph.layers.size());
    harness::testing::expect_well_formed(step.events, layers, step.wall_ms);
    const auto phases = harness::testing::phases_by_layer(step.events, layers);
    harness::testing::expect_layer_phases(p.graph, phases);
    for (int l : layers_of(p.graph, LayerKind::relu))
        EXPECT_EQ(phases[static_cast<size_t>(l) + 1],
                  std::set<hb_phase>({HB_PHASE_FORWARD, HB_PHASE_BACKWARD_DATA}))
            << p.graph.layers[static_cast<size_t>(l)].name;
    // The batch handed over from host memory, before anything else.
    EXPECT_EQ(count_events(step.events, "batch staging", HB_PHASE_TRANSFER), 1);
    EXPECT_EQ(step.events.front().phase, HB_PHASE_TRANSFER);
}

TEST(OnednnProfile, OnlyProfiledStepsHaveEventsAndTheyChangeNoResult) {
    Profiled p;
    auto plain = p.session();
    auto profiled = p.session();
    harness::testing::expect_profiling_changes_nothing(*plain, *profiled, p.graph);
}

TEST(OnednnProfile, ThroughThePluginsTable) {
    const hb_plugin_api& api =
        harness::testing::load_plugin(std::string(HB_PLUGIN_DIR) + "/hb_onednn.so");
    harness::testing::expect_profiling_through_the_abi(
        api, harness::model::build_hourglass(harness::testing::tiny_hourglass()),
        {{"threads", "1"}});
}

}  // namespace
