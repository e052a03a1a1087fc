// The oneDNN backend's whole training steps against the reference backend (the oracle) in
// float32: small graphs for every layer kind and the paths between them, a small stacked
// hourglass, and the session's manifest, options and input gradient.
#include "backend_comparison.hpp"
#include "data/initial_state.hpp"
#include "graph_builder.hpp"
#include "model/hourglass.hpp"

// Both plugins have a session.hpp on the include path.
#include "../onednn/session.hpp"
#include "../reference/session.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace {

using harness::model::AbiGraph;
using harness::model::Graph;
using harness::model::TensorRole;
using harness::testing::GraphBuilder;

// ------------------------------------------------------------------ running both backends

using harness::testing::rmsprop;
using harness::testing::small_hourglass;
using harness::testing::Tensors;
using harness::testing::Trace;

struct SessionRun {
    Trace trace;
    std::string manifest;  // after the last step
    uint64_t peak_memory = 0;
    std::vector<float> input_gradient;  // of the last step, when the session was asked for it
};

// `steps` steps on one batch of `seed`, from the initial state of `seed`; `input_gradient`: the
// session is asked for the gradient of its input batch too.
template <class Session>
SessionRun run(const Graph& graph, const hb_optimizer& optimizer,
               const std::vector<hb_option>& options, hb_placement placement, int steps,
               uint64_t seed, bool input_gradient = false) {
    const AbiGraph abi(graph);
    hb_session_desc desc =
        harness::testing::session_desc(abi, optimizer, options, "cpu", placement);
    desc.input_gradient = input_gradient ? 1 : 0;
    Session session(desc);
    const Tensors state = harness::data::initial_state(graph, seed);
    const auto batches = harness::data::make_batches(graph, seed, 1);
    SessionRun r;
    r.trace = harness::testing::run_steps(session, {graph, state, batches}, steps);
    for (const hb::StepResult& step : r.trace.steps) {
        EXPECT_GE(step.forward_ms, 0);
        EXPECT_GE(step.backward_ms, 0);
        EXPECT_GE(step.optimizer_ms, 0);
    }
    r.manifest = session.manifest_json();
    r.peak_memory = session.peak_memory_bytes();
    if (input_gradient) {
        const auto& input = graph.values[static_cast<size_t>(graph.input)];
        r.input_gradient.resize(static_cast<size_t>(harness::model::elements(input.shape)));
        session.read_input_gradient(r.input_gradient.data());
    }
    return r;
}

// After one step the backends must agree closely: the loss to 1e-5; every gradient to 1e-3 of its
// tensor's largest, or of 1e-2 of the network's largest where a gradient is only rounding noise
// (a conv bias followed by batch norm is zero in exact arithmetic); every tensor to 2e-5 of its
// largest element or 2e-6, whichever is more, but for the parameters RMSProp moves by the sign of
// a gradient within that tolerance of zero, which either backend may move either way.
const harness::check::Tolerance kOneStep =
    harness::testing::tight_tolerance("oneDNN after one step", 1e-5, 1e-3, 2e-5, 1e-2, 0.1);

// A parameter moved the other way in the first step changes the second step's forward pass:
// small networks are rough enough for a single such weight to move the loss by 1e-4. After two
// steps the losses are held to 1e-3, the running variances to 1e-3 of their largest or of 1, and
// the running means to 1e-2 of their largest or of 1: a residual stream carries the sum of every
// bias before it, each moved either way by a noise gradient.
const harness::check::Tolerance kTwoStepVariances = harness::testing::tight_tolerance(
    "oneDNN's running variances after two steps", 1e-3, 0, 1e-3, 0, 1);
const harness::check::Tolerance kTwoStepMeans = harness::testing::tight_tolerance(
    "oneDNN's running means after two steps", 1e-3, 0, 1e-2, 0, 1);

// Each step of RMSProp from a gradient near zero moves a parameter by about lr / sqrt(1 - alpha)
// times its sign, in either backend either way: after `steps` steps every element of every
// parameter, those left out above included, is held to within 2 * `steps` such moves.
harness::check::Tolerance parameters_within_moves(const Graph& graph, const Trace& expected,
                                                  int steps, const hb_optimizer& optimizer) {
    // Every parameter is measured against the largest of all, and at least 1: a relative
    // tolerance that is this absolute bound for each tensor.
    double largest = 1;
    for (size_t i = 0; i < graph.tensors.size(); ++i)
        if (graph.tensors[i].trainable())
            for (float x : expected.states[static_cast<size_t>(steps - 1)][i])
                largest = std::max(largest, std::fabs(static_cast<double>(x)));
    const double move = optimizer.learning_rate / std::sqrt(1 - optimizer.alpha);
    return harness::testing::tight_tolerance(
        "oneDNN's parameters within " + std::to_string(2 * steps) + " RMSProp moves", 1e-3, 0,
        2 * steps * move / largest, 0, largest);
}

// The tensors of each kind: the trainable ones, the running means, the running variances.
bool is_parameter(const harness::model::Tensor& t) {
    return t.trainable();
}
bool is_running_mean(const harness::model::Tensor& t) {
    return t.role == TensorRole::running_mean;
}
bool is_running_variance(const harness::model::Tensor& t) {
    return t.role == TensorRole::running_var;
}

// Compares two steps of the oneDNN backend with the reference: the losses, every gradient after
// the first step and the state (parameters and running statistics) after each step.
//
// Float32 rounding differs between the backends (oneDNN folds the batch-norm statistics into one
// scale and shift, sums in other orders), so a ReLU input within rounding of zero, or two inputs
// of a max-pool window within rounding of each other, can send a gradient elsewhere in one
// backend than in the other; in a small network each such element moves later gradients by up
// to a few percent. The data sets below are ones without such near ties at this tolerance, with
// oneDNN's AVX2 kernels and with its AVX-512 ones (ONEDNN_MAX_CPU_ISA=AVX2 runs the former on a
// machine that has the latter).
// One thread by default: OpenMP threads that spin at barriers crawl when other processes share
// the cores, as they do when tests run in parallel.
void expect_conformance(const Graph& graph,
                        const std::vector<hb_option>& options = {{"threads", "1"}},
                        hb_placement placement = HB_PLACEMENT_DEVICE,
                        const hb_optimizer& optimizer = rmsprop(), uint64_t seed = 11) {
    using harness::testing::capture_after;
    using harness::testing::conforms;
    const Trace expected =
        run<hb_reference::Session>(graph, optimizer, {{"threads", "2"}}, placement, 2, seed).trace;
    const Trace actual =
        run<hb_onednn::Session>(graph, optimizer, options, placement, 2, seed).trace;
    EXPECT_TRUE(
        conforms(capture_after(graph, actual, 1), capture_after(graph, expected, 1), kOneStep));
    using harness::testing::part_of;
    EXPECT_TRUE(
        conforms(part_of(graph, capture_after(graph, actual, 1), false, false, is_parameter),
                 part_of(graph, capture_after(graph, expected, 1), false, false, is_parameter),
                 parameters_within_moves(graph, expected, 1, optimizer)));
    // The state after two steps, every element of it (the gradients, those of step 1, are
    // compared above); the losses with the parameters.
    const harness::check::StepCapture a = capture_after(graph, actual, 2);
    const harness::check::StepCapture b = capture_after(graph, expected, 2);
    EXPECT_TRUE(conforms(part_of(graph, a, true, false, is_parameter),
                         part_of(graph, b, true, false, is_parameter),
                         parameters_within_moves(graph, expected, 2, optimizer)));
    const harness::check::StepCapture means = part_of(graph, b, false, false, is_running_mean);
    if (!means.state.empty()) {  // a graph with batch norms
        EXPECT_TRUE(
            conforms(part_of(graph, a, false, false, is_running_mean), means, kTwoStepMeans));
        EXPECT_TRUE(conforms(part_of(graph, a, false, false, is_running_variance),
                             part_of(graph, b, false, false, is_running_variance),
                             kTwoStepVariances));
    }
}
// ------------------------------------------------------------- conformance, layer by layer

TEST(OnednnConformance, Convolutions) {
    GraphBuilder b;
    int x = b.input({2, 3, 20, 20});
    x = b.conv("first", x, 16, 7, 2, 3);            // 3 input channels, stride 2: plain input
    x = b.conv("square", x, 16, 3, 1, 1);           // blocked 3x3
    x = b.conv("pointwise", x, 8, 1, 1, 0, false);  // 1x1 without bias
    b.loss("loss", x);
    const Graph graph = b.take();
    expect_conformance(graph, {{"threads", "2"}});
    expect_conformance(graph, {{"threads", "2"}, {"layout", "plain"}});
}

TEST(OnednnConformance, ChannelCountsThatPadTheBlockedLayout) {
    GraphBuilder b;
    int x = b.input({2, 5, 9, 9});
    x = b.conv("odd", x, 6, 3, 1, 1);     // plain input, padded output
    x = b.conv("narrow", x, 4, 1, 1, 0);  // padded input and output
    const int y = b.conv("wide", x, 12, 3, 1, 1);
    b.loss("loss", b.conv("back", y, 4, 1, 1, 0));
    const Graph graph = b.take();
    expect_conformance(graph);
    expect_conformance(graph, {{"threads", "1"}, {"layout", "plain"}});
}

TEST(OnednnConformance, BatchNormWithAndWithoutTheFusedRelu) {
    GraphBuilder b;
    const int x = b.conv("conv", b.input({2, 3, 10, 10}), 16, 3, 1, 1);
    const int fused = b.relu("relu1", b.batchnorm("bn1", x));
    const int normalised = b.batchnorm("bn2", fused);  // feeds the ReLU and the add
    const int activated = b.relu("relu2", normalised);
    const int sum = b.add("add", {activated, normalised});
    b.loss("loss", b.conv("out", sum, 8, 1, 1, 0));
    const Graph graph = b.take();
    expect_conformance(graph);
    expect_conformance(graph, {{"fuse_batchnorm_relu", "false"}, {"threads", "1"}});
    expect_conformance(graph, {{"threads", "1"}, {"layout", "plain"}});
}

TEST(OnednnConformance, PoolingUpsamplingAndAddsOfSeveralInputs) {
    GraphBuilder b;
    const int x = b.conv("conv", b.input({2, 4, 18, 18}), 8, 3, 1, 1);
    const int pooled = b.maxpool("pool", x);        // 18 -> 9
    const int odd = b.maxpool("pool_odd", pooled);  // 9 -> 4, last row and column unused
    const int up = b.upsample("up", b.conv("low", odd, 8, 3, 1, 1));  // 4 -> 8
    const int wide = b.upsample("up2", up);                           // 8 -> 16
    const int cropped = b.conv("crop", x, 8, 3, 1, 0);                // 18 -> 16
    const int sum = b.add("add", {wide, cropped, wide});              // one input twice
    b.loss("loss", b.conv("out", sum, 8, 1, 1, 0));
    const Graph graph = b.take();
    // The even sizes run the plugin's own pooling loops by default, the odd one oneDNN's.
    expect_conformance(graph, {{"threads", "2"}});
    expect_conformance(graph, {{"threads", "2"}, {"native_pooling", "false"}});
    expect_conformance(graph, {{"threads", "2"}, {"layout", "plain"}});
}

TEST(OnednnConformance, SeveralWeightedLossesAndAValueFeedingALossAndAConvolution) {
    GraphBuilder b;
    const int x = b.conv("conv", b.input({2, 3, 8, 8}), 16, 3, 1, 1);
    const int heatmaps = b.conv("out1", b.relu("relu", x), 4, 1, 1, 0);
    b.loss("loss1", heatmaps, 0.5f);
    const int merged = b.add("merge", {x, b.conv("merge_heatmaps", heatmaps, 16, 1, 1, 0)});
    b.loss("loss2", b.conv("out2", merged, 4, 1, 1, 0), 0.5f);
    const Graph graph = b.take();
    expect_conformance(graph);
    expect_conformance(graph, {{"threads", "2"}}, HB_PLACEMENT_HOST);
    expect_conformance(graph, {{"threads", "2"}, {"layout", "plain"}}, HB_PLACEMENT_HOST);
}

TEST(OnednnConformance, TensorflowRmspropWithMomentumAndWeightDecay) {
    GraphBuilder b;
    const int x = b.conv("conv", b.input({2, 3, 8, 8}), 8, 3, 1, 1);
    b.loss("loss", b.conv("out", b.relu("relu", b.batchnorm("bn", x)), 4, 1, 1, 0));
    hb_optimizer o{};
    o.variant = HB_RMSPROP_TENSORFLOW;
    o.learning_rate = 1e-3f;
    o.alpha = 0.9f;
    o.eps = 1e-10f;
    o.momentum = 0.5f;
    o.weight_decay = 1e-2f;
    o.initial_square_average = 1.0f;
    expect_conformance(b.take(), {{"threads", "1"}}, HB_PLACEMENT_DEVICE, o);
}

// ---------------------------------------------------------------- the stacked hourglass

TEST(OnednnConformance, SmallHourglass) {
    expect_conformance(harness::model::build_hourglass(small_hourglass()), {{"threads", "1"}},
                       HB_PLACEMENT_DEVICE, rmsprop(), 8);
}

// Activations in NCHW between layers, each convolution reordering its input and output.
TEST(OnednnConformance, SmallHourglassInThePlainLayout) {
    expect_conformance(harness::model::build_hourglass(small_hourglass()),
                       {{"threads", "1"}, {"layout", "plain"}}, HB_PLACEMENT_DEVICE, rmsprop(), 8);
}

TEST(OnednnConformance, SmallHourglassWithoutConvBiasUnfusedOnHostPlacement) {
    harness::model::HourglassSpec spec = small_hourglass();
    spec.conv_bias = false;
    spec.features = 16;  // every residual of the stacks keeps its input width: identity skips
    expect_conformance(harness::model::build_hourglass(spec),
                       {{"fuse_batchnorm_relu", "false"}, {"threads", "1"}}, HB_PLACEMENT_HOST,
                       rmsprop(), 2);
}

// -------------------------------------------------------------------------- the session

TEST(Session, RejectsOtherDevicesAndUnknownOptions) {
    harness::testing::expect_cpu_session_checks_its_description<hb_onednn::Session>(
        small_hourglass());
}

TEST(Session, ReportsMemoryAndManifest) {
    const SessionRun trace =
        run<hb_onednn::Session>(harness::model::build_hourglass(small_hourglass()), rmsprop(),
                                {{"threads", "2"}}, HB_PLACEMENT_DEVICE, 1, 3);
    EXPECT_GT(trace.peak_memory, 0u);
    const std::string& manifest = trace.manifest;
    EXPECT_NE(manifest.find("\"math\": \"fp32\""), std::string::npos) << manifest;
    EXPECT_NE(manifest.find("\"threads\": 2"), std::string::npos) << manifest;
    EXPECT_NE(manifest.find("\"convolution_forward\""), std::string::npos) << manifest;
    EXPECT_NE(manifest.find("\"batchnorm_relu\""), std::string::npos) << manifest;
    EXPECT_EQ(manifest.find("ref:"), std::string::npos) << manifest;
    EXPECT_NE(manifest.find("\"native:2x2\""), std::string::npos) << manifest;
}

TEST(Session, PlainLayoutKeepsActivationsInNchwAndReordersAroundConvolutions) {
    const Graph graph = harness::model::build_hourglass(small_hourglass());
    const std::string blocked =
        run<hb_onednn::Session>(graph, rmsprop(), {{"threads", "1"}}, HB_PLACEMENT_DEVICE, 1, 3)
            .manifest;
    const std::string plain =
        run<hb_onednn::Session>(graph, rmsprop(), {{"threads", "1"}, {"layout", "plain"}},
                                HB_PLACEMENT_DEVICE, 1, 3)
            .manifest;
    EXPECT_NE(blocked.find("\"layout\": \"blocked\""), std::string::npos) << blocked;
    EXPECT_NE(blocked.find("\"activation_layouts\": {\"nChw"), std::string::npos) << blocked;
    EXPECT_NE(plain.find("\"layout\": \"plain\""), std::string::npos) << plain;
    EXPECT_NE(plain.find("\"activation_layouts\": {\"nchw\": "), std::string::npos) << plain;
    EXPECT_EQ(plain.find("nChw"), std::string::npos) << plain;
    EXPECT_EQ(plain.find("\"forward\": 0"), std::string::npos) << plain;
    EXPECT_NE(plain.find("\"convolution_into_add\": 0"), std::string::npos) << plain;

    std::string message;
    EXPECT_EQ(harness::testing::creation_status<hb_onednn::Session>(small_hourglass(), "cpu",
                                                                    {{"layout", "nhwc"}}, &message),
              HB_UNSUPPORTED);
    EXPECT_NE(message.find("layout"), std::string::npos) << message;
}

// Asked for it, a session also gives the gradient of the loss with respect to its input batch,
// whatever reads the input (a convolution and an add here), as the reference does; not asked,
// it plans none (the SDK refuses the read:
// CallGuard.TheInputGradientIsReadOnlyWhereAskedAfterAStep).
TEST(Session, GivesTheInputGradientOnlyWhenAskedForIt) {
    GraphBuilder b;
    const int x = b.input({2, 3, 10, 10});
    const int sum = b.add("skip", {x, b.conv("first", x, 3, 3, 1, 1)});
    b.loss("loss", b.conv("out", sum, 4, 1, 1, 0));
    const Graph graph = b.take();
    const hb_optimizer optimizer = rmsprop();
    const SessionRun expected = run<hb_reference::Session>(graph, optimizer, {{"threads", "2"}},
                                                           HB_PLACEMENT_DEVICE, 1, 7, true);
    harness::check::StepCapture baseline;
    baseline.losses = expected.trace.losses;
    baseline.input_gradient = expected.input_gradient;
    const harness::check::Tolerance tolerance =
        harness::testing::tight_tolerance("the input's gradient", 1e-5, 1e-4, 0, 0);
    for (const hb_placement placement : {HB_PLACEMENT_DEVICE, HB_PLACEMENT_HOST})
        for (const char* layout : {"blocked", "plain"}) {
            const SessionRun actual = run<hb_onednn::Session>(
                graph, optimizer, {{"threads", "1"}, {"layout", layout}}, placement, 1, 7, true);
            harness::check::StepCapture candidate;
            candidate.losses = actual.trace.losses;
            candidate.input_gradient = actual.input_gradient;
            EXPECT_TRUE(harness::testing::conforms(candidate, baseline, tolerance))
                << layout << (placement == HB_PLACEMENT_HOST ? ", host placement" : "");
            EXPECT_NE(actual.manifest.find("\"input_gradient\": true"), std::string::npos)
                << actual.manifest;
        }

    const AbiGraph abi(graph);
    const std::vector<hb_option> options = {{"threads", "1"}};
    hb_onednn::Session unasked(harness::testing::session_desc(abi, optimizer, options));
    EXPECT_NE(unasked.manifest_json().find("\"input_gradient\": false"), std::string::npos);
}

}  // namespace
