// The LibTorch plugin's profiling logic that needs neither LibTorch nor a GPU
// (plugins/libtorch/op_events.hpp): which layer created each autograd node, the outermost operation
// of a thread, how operations become events, and how the CUDA event pool grows.
#include "op_events.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace hb_libtorch::profile;

Region forward(int32_t layer) {
    return {layer, Part::forward};
}

TEST(LibTorchSequenceMap, FindsTheLayerWhoseForwardCreatedANode) {
    SequenceMap map;
    map.add(10, 13, forward(0));
    map.add(13, 13, forward(1));  // a layer that created no node
    map.add(13, 15, forward(2));
    map.add(15, 16, {-1, Part::loss});
    map.add(20, 21, forward(3));  // nodes 16-19 belong to nobody
    EXPECT_EQ(map.size(), 4u);
    EXPECT_EQ(map.find(9), nullptr);
    EXPECT_EQ(map.find(-1), nullptr);
    for (int64_t s : {10, 11, 12}) EXPECT_EQ(map.find(s)->layer, 0) << s;
    for (int64_t s : {13, 14}) EXPECT_EQ(map.find(s)->layer, 2) << s;
    EXPECT_EQ(map.find(15)->part, Part::loss);
    for (int64_t s : {16, 19, 21, 1000}) EXPECT_EQ(map.find(s), nullptr) << s;
    EXPECT_EQ(map.find(20)->layer, 3);
    map.clear();
    EXPECT_EQ(map.find(10), nullptr);
}

TEST(LibTorchSequenceMap, RefusesRangesOutOfOrder) {
    SequenceMap map;
    map.add(10, 20, forward(0));
    EXPECT_THROW(map.add(15, 25, forward(1)), std::logic_error);
    EXPECT_NO_THROW(map.add(20, 25, forward(1)));
}

TEST(LibTorchTrackRecorder, KeepsOnlyTheOutermostOperations) {
    TrackRecorder t;
    OpRecord* conv = t.start("aten::conv2d", 5, false, forward(0));
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(t.start("aten::convolution", 5, false, forward(0)), nullptr);
    EXPECT_EQ(t.start("aten::_convolution", 5, false, forward(0)), nullptr);
    EXPECT_EQ(t.end(), nullptr);
    EXPECT_EQ(t.end(), nullptr);
    OpRecord* ended = t.end();
    ASSERT_NE(ended, nullptr);
    EXPECT_STREQ(ended->name, "aten::conv2d");
    EXPECT_TRUE(ended->finished);
    EXPECT_EQ(t.depth(), 0);

    ASSERT_NE(t.start("aten::relu_", 6, false, forward(1)), nullptr);
    ASSERT_NE(t.end(), nullptr);
    // An end whose start came before the callbacks were installed is ignored.
    EXPECT_EQ(t.end(), nullptr);
    EXPECT_EQ(t.depth(), 0);
    ASSERT_EQ(t.records().size(), 2u);
    EXPECT_EQ(t.records()[1].region.layer, 1);
}

TEST(LibTorchTrackRecorder, TakesANodesNumberFromItsOwnRecordInsideTheEngines) {
    TrackRecorder t;
    // LibTorch 2.x: the engine's record has no number, the node's own record inside it has.
    ASSERT_NE(t.start("autograd::engine::evaluate_function: ReluBackward0", -1, true, {}), nullptr);
    EXPECT_EQ(t.start("ReluBackward0", 665, true, {}), nullptr);
    EXPECT_EQ(t.start("aten::threshold_backward", 700, false, {}), nullptr);
    t.end();
    t.end();
    t.end();
    EXPECT_EQ(t.records()[0].sequence_nr, 665);
    // A number the outer record has is kept; so is one after the record ended.
    t.start("autograd::engine::evaluate_function: ReluBackward0", 12, true, {});
    t.start("ReluBackward0", 13, true, {});
    t.end();
    t.end();
    EXPECT_EQ(t.records()[1].sequence_nr, 12);
    t.start("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", -1, true, {});
    t.start("torch::autograd::AccumulateGrad", -1, true, {});
    t.end();
    t.end();
    EXPECT_EQ(t.records()[2].sequence_nr, -1);
}

TEST(LibTorchTrackRecorder, InternsNamesThatOutliveTheCallersString) {
    TrackRecorder t;
    std::string name = "autograd::engine::evaluate_function: ConvolutionBackward0";
    t.start(name, 3, true, {-1, Part::backward});
    t.end();
    const char* first = t.records()[0].name;
    name.assign(name.size(), 'x');
    EXPECT_STREQ(first, "autograd::engine::evaluate_function: ConvolutionBackward0");
    t.start("autograd::engine::evaluate_function: ConvolutionBackward0", 2, true, {});
    t.end();
    EXPECT_EQ(t.records()[1].name, first);
}

TEST(LibTorchOpNames, EngineNodesAreShownByTheirNodeName) {
    EXPECT_EQ(short_name("autograd::engine::evaluate_function: ConvolutionBackward0"),
              "ConvolutionBackward0");
    EXPECT_EQ(short_name("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"),
              "AccumulateGrad");
    EXPECT_EQ(short_name("aten::conv2d"), "aten::conv2d");
    EXPECT_TRUE(is_engine_node("autograd::engine::evaluate_function: AddBackward0"));
    EXPECT_FALSE(is_engine_node("AddBackward0"));
}

OpRecord op(const char* name, Region region, int64_t seq = -1, bool node = false) {
    OpRecord r;
    r.name = name;
    r.region = region;
    r.sequence_nr = seq;
    r.node = node;
    r.finished = true;
    return r;
}

TEST(LibTorchAttributor, FollowsTheDesignsPhaseRules) {
    SequenceMap map;
    map.add(0, 2, forward(0));        // conv
    map.add(2, 3, forward(1));        // batch norm
    map.add(3, 4, forward(2));        // mse_loss
    map.add(4, 5, {-1, Part::loss});  // the loss sum
    const Region backward{-1, Part::backward};
    for (bool device : {false, true}) {
        SCOPED_TRACE(device ? "cuda" : "cpu");
        Attributor attribute(map, device);
        attribute.new_track();
        auto is = [&](const OpRecord& r, int32_t layer, hb_phase phase) {
            const Attribution a = attribute(r);
            EXPECT_EQ(a.layer, layer) << r.name;
            EXPECT_EQ(a.phase, phase) << r.name;
        };
        is(op("zero_grad", {-1, Part::zero_grad}), -1, HB_PHASE_OTHER);
        is(op("aten::to", {-1, Part::stage}), -1, device ? HB_PHASE_TRANSFER : HB_PHASE_REORDER);
        is(op("aten::conv2d", forward(0), 0), 0, HB_PHASE_FORWARD);
        is(op("aten::add", {-1, Part::loss}, 4), -1, HB_PHASE_LOSS);
        // The seed, before any node; then the nodes, each with its forward's layer.
        is(op("aten::ones_like", backward, 5), -1, HB_PHASE_LOSS);
        const char* add = "autograd::engine::evaluate_function: AddBackward0";
        const char* mse = "autograd::engine::evaluate_function: MseLossBackward0";
        const char* bn = "autograd::engine::evaluate_function: NativeBatchNormBackward0";
        const char* conv = "autograd::engine::evaluate_function: ConvolutionBackward0";
        const char* accumulate =
            "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad";
        is(op(add, backward, 4, true), -1, HB_PHASE_LOSS);
        is(op(mse, backward, 3, true), 2, HB_PHASE_BACKWARD);
        is(op(bn, backward, 2, true), 1, HB_PHASE_BACKWARD);
        is(op(accumulate, backward, -1, true), 1, HB_PHASE_BACKWARD_WEIGHTS);
        is(op(accumulate, backward, -1, true), 1, HB_PHASE_BACKWARD_WEIGHTS);
        is(op(conv, backward, 1, true), 0, HB_PHASE_BACKWARD);
        is(op(accumulate, backward, -1, true), 0, HB_PHASE_BACKWARD_WEIGHTS);
        // A node of no known range, and an operation between nodes.
        is(op("autograd::engine::evaluate_function: CloneBackward0", backward, 99, true), -1,
           HB_PHASE_BACKWARD);
        is(op("aten::add_", backward), -1, HB_PHASE_OTHER);
        is(op("aten::addcdiv_", {7, Part::update}), 7, HB_PHASE_UPDATE);
        is(op("aten::_foreach_mul_", {-1, Part::update}), -1, HB_PHASE_UPDATE);
        is(op("aten::item", {-1, Part::read_back}), -1, device ? HB_PHASE_TRANSFER : HB_PHASE_LOSS);
        is(op("aten::empty", {-1, Part::none}), -1, HB_PHASE_OTHER);
        // A new track starts without the previous one's nodes.
        attribute.new_track();
        is(op("aten::ones_like", backward), -1, HB_PHASE_LOSS);
        is(op(accumulate, backward, -1, true), -1, HB_PHASE_BACKWARD_WEIGHTS);
    }
}

OpRecord timed(const char* name, Region region, double start, double end, int64_t stream = 0) {
    OpRecord r = op(name, region);
    r.start_ms = start;
    r.end_ms = end;
    r.stream = stream;
    return r;
}

TEST(LibTorchAddEvents, OrdersTheTracksOperationsByStartAndNamesTheirTracks) {
    SequenceMap map;
    const std::vector<OpRecord> main = {timed("aten::conv2d", forward(0), 0.5, 1.0),
                                        timed("aten::relu_", forward(1), 1.0, 1.5),
                                        timed("aten::mul_", {0, Part::update}, 4.0, 4.5)};
    std::vector<OpRecord> worker = {
        timed("autograd::engine::evaluate_function: ConvolutionBackward0", {-1, Part::backward},
              2.0, 3.0, 7)};
    worker[0].node = true;
    OpRecord unfinished = timed("aten::add", forward(1), 5.0, 0);
    unfinished.finished = false;
    worker.push_back(unfinished);

    hb::EventLog log;
    log.set_enabled(true);
    log.begin_step();
    add_events({{"main", &main}, {"thread 1", &worker}}, map, false, log);
    const std::vector<hb_event>& events = log.events();
    ASSERT_EQ(events.size(), 4u);
    EXPECT_STREQ(events[0].name, "aten::conv2d");
    EXPECT_STREQ(events[2].name, "ConvolutionBackward0");
    EXPECT_STREQ(events[2].track, "thread 1");
    EXPECT_EQ(events[2].phase, HB_PHASE_BACKWARD);
    EXPECT_STREQ(events[3].name, "aten::mul_");
    EXPECT_STREQ(events[3].track, "main");
    EXPECT_DOUBLE_EQ(events[3].start_ms, 4.0);
    EXPECT_DOUBLE_EQ(events[3].end_ms, 4.5);

    // On a device, the tracks are the streams the operations were timed on.
    log.begin_step();
    add_events({{"main", &main, true}, {"thread 1", &worker, true}}, map, true, log);
    ASSERT_EQ(log.events().size(), 4u);
    EXPECT_STREQ(log.events()[0].track, "stream 0");
    EXPECT_STREQ(log.events()[2].track, "stream 7");
}

TEST(LibTorchMarkPool, GrowsToTheLargestStepAndThenCreatesNone) {
    MarkPool pool;
    size_t created = 0;
    auto take = [&] {
        if (const size_t more = pool.shortfall()) {
            created += more;
            pool.grown(more);
        }
        return pool.take();
    };
    for (int step = 0; step < 3; ++step) {
        pool.begin_step();
        const size_t before = created;
        for (uint32_t i = 0; i < 1001; ++i) EXPECT_EQ(take(), i);
        if (step == 0)
            EXPECT_GE(created, 1001u);
        else
            EXPECT_EQ(created, before) << "step " << step;
    }
    // 256 at least each time, then half again: 256, 512, 768, 1152.
    EXPECT_EQ(pool.capacity(), 1152u);
    EXPECT_EQ(pool.used(), 1001u);
    MarkPool empty;
    EXPECT_THROW(empty.take(), std::logic_error);
}

}  // namespace
