// The reference backend's per-operation events (docs/design.md §3 "Profiling"): one per layer
// pass, a convolution's weight and input gradients apart, one update per trainable tensor, and
// the rest of the step; none unprofiled, and the same results either way.
#include "backend_comparison.hpp"
#include "loaded_plugin.hpp"
#include "model/hourglass.hpp"
#include "profile_events.hpp"
#include "session.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace hb_reference {
namespace {

using harness::model::AbiGraph;
using harness::model::Graph;
using harness::model::LayerKind;
using harness::testing::rmsprop;
using harness::testing::timed_step;

struct Profiled {
    const Graph graph = harness::model::build_hourglass(harness::testing::tiny_hourglass());
    const AbiGraph abi{graph};
    const hb_optimizer optimizer = rmsprop();
    const std::vector<hb_option> options = {{"threads", "2"}};

    std::unique_ptr<Session> session(hb_placement placement = HB_PLACEMENT_DEVICE) {
        auto s = std::make_unique<Session>(
            harness::testing::session_desc(abi, optimizer, options, "cpu", placement));
        harness::testing::load_problem(*s, graph, 5);
        return s;
    }
};

int count(const std::vector<hb_event>& events, const std::string& name, hb_phase phase) {
    int n = 0;
    for (const hb_event& e : events) n += e.name == name && e.phase == phase;
    return n;
}

TEST(ReferenceProfile, EveryLayerPassAndEveryUpdateIsAnEvent) {
    Profiled p;
    auto session = p.session();
    session->set_profiling(true);
    const auto step = timed_step(*session, 0);
    const int layers = static_cast<int>(p.graph.layers.size());
    harness::testing::expect_well_formed(step.events, layers, step.wall_ms);
    const auto phases = harness::testing::phases_by_layer(step.events, layers);
    harness::testing::expect_layer_phases(p.graph, phases);
    for (int l = 0; l < layers; ++l) {
        const harness::model::Layer& layer = p.graph.layers[static_cast<size_t>(l)];
        const std::set<hb_phase>& have = phases[static_cast<size_t>(l) + 1];
        EXPECT_TRUE(have.count(HB_PHASE_FORWARD)) << layer.name;
        if (layer.kind == LayerKind::relu || layer.kind == LayerKind::maxpool2d ||
            layer.kind == LayerKind::upsample || layer.kind == LayerKind::add) {
            EXPECT_EQ(have, std::set<hb_phase>({HB_PHASE_FORWARD, HB_PHASE_BACKWARD_DATA}))
                << layer.name;
        }
    }
    // One update per trainable tensor, with its layer; the zeroing of the parameter gradients
    // and the sum of the losses belong to no layer.
    int trainable = 0;
    for (const auto& t : p.graph.tensors) {
        if (!t.trainable()) continue;
        ++trainable;
        EXPECT_TRUE(phases[static_cast<size_t>(t.layer) + 1].count(HB_PHASE_UPDATE)) << t.name;
    }
    EXPECT_EQ(count(step.events, "rmsprop_update", HB_PHASE_UPDATE), trainable);
    EXPECT_EQ(count(step.events, "gradient zeroing", HB_PHASE_OTHER), 1);
    EXPECT_EQ(count(step.events, "loss sum", HB_PHASE_LOSS), 1);
    EXPECT_EQ(phases[0], std::set<hb_phase>({HB_PHASE_OTHER, HB_PHASE_LOSS}));
    EXPECT_EQ(count(step.events, "batch staging", HB_PHASE_TRANSFER), 0);
}

TEST(ReferenceProfile, HostPlacementStagesTheBatchAsATransfer) {
    Profiled p;
    auto session = p.session(HB_PLACEMENT_HOST);
    session->set_profiling(true);
    const auto step = timed_step(*session, 0);
    harness::testing::expect_well_formed(step.events, static_cast<int>(p.graph.layers.size()),
                                         step.wall_ms);
    EXPECT_EQ(count(step.events, "batch staging", HB_PHASE_TRANSFER), 1);
    EXPECT_EQ(step.events.front().phase, HB_PHASE_TRANSFER);
}

TEST(ReferenceProfile, OnlyProfiledStepsHaveEventsAndTheyChangeNoResult) {
    Profiled p;
    auto plain = p.session();
    auto profiled = p.session();
    harness::testing::expect_profiling_changes_nothing(*plain, *profiled, p.graph);
}

TEST(ReferenceProfile, ThroughThePluginsTable) {
    const hb_plugin_api& api =
        harness::testing::load_plugin(std::string(HB_PLUGIN_DIR) + "/hb_reference.so");
    harness::testing::expect_profiling_through_the_abi(
        api, harness::model::build_hourglass(harness::testing::tiny_hourglass()),
        {{"threads", "2"}});
}

}  // namespace
}  // namespace hb_reference
