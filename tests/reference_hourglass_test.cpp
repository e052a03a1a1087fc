// The reference backend on whole stacked-hourglass graphs built by the harness: gradients of the
// training loss against central finite differences (in double), and the float32 session through
// its public interface (determinism across thread counts, placements, errors).
#include "data/initial_state.hpp"
#include "model/hourglass.hpp"
#include "network.hpp"
#include "session.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace reference {
namespace {

using harness::model::AbiGraph;
using harness::model::Graph;
using harness::model::HourglassSpec;

HourglassSpec tiny_spec() {
    HourglassSpec spec;
    spec.stacks = 2;
    spec.features = 16;
    spec.depth = 2;
    spec.joints = 4;
    spec.input_size = 32;
    spec.batch = 2;
    return spec;
}

hb_optimizer torch_rmsprop() {
    hb_optimizer o{};
    o.variant = HB_RMSPROP_TORCH;
    o.learning_rate = 2.5e-4f;
    o.alpha = 0.99f;
    o.eps = 1e-8f;
    return o;
}

std::vector<double> to_double(const std::vector<float>& v) {
    return {v.begin(), v.end()};
}

TEST(ReferenceHourglass, GradientsOfEveryTensorMatchFiniteDifferences) {
    const Graph graph = harness::model::build_hourglass(tiny_spec());
    const AbiGraph abi(graph);
    const auto state = harness::data::initial_state(graph, 42);
    const auto batches = harness::data::make_batches(graph, 42, 1);
    const std::vector<double> input = to_double(batches.inputs[0]);
    const std::vector<double> target = to_double(batches.targets[0]);

    ThreadPool pool(2);
    Network<double> network(*abi.get(), pool);
    ASSERT_EQ(network.num_tensors(), static_cast<int>(state.size()));
    for (int i = 0; i < network.num_tensors(); ++i) network.tensor(i) = to_double(state[i]);

    network.forward(input.data(), target.data());
    network.backward();
    int checked_tensors = 0;
    for (int i = 0; i < network.num_tensors(); ++i) {
        const TensorInfo& info = network.tensor_info(i);
        if (!info.trainable) continue;
        ++checked_tensors;
        const std::vector<double> analytic = network.gradient(i);
        std::vector<double>& t = network.tensor(i);
        const int layer = graph.tensors[i].layer;  // earlier layers do not depend on the tensor
        for (int64_t at : {int64_t{0}, info.elements / 2, info.elements - 1}) {
            const double h = 1e-6, saved = t[at];
            t[at] = saved + h;
            const double plus = network.forward(input.data(), target.data(), layer);
            t[at] = saved - h;
            const double minus = network.forward(input.data(), target.data(), layer);
            t[at] = saved;
            const double numeric = (plus - minus) / (2 * h);
            EXPECT_NEAR(analytic[at], numeric, 1e-7 + 1e-5 * std::fabs(numeric))
                << info.name << "[" << at << "]";
        }
        network.forward(input.data(), target.data(), layer);  // back to the unperturbed values
    }
    EXPECT_EQ(checked_tensors, static_cast<int>(std::count_if(
                                   graph.tensors.begin(), graph.tensors.end(),
                                   [](const harness::model::Tensor& t) { return t.trainable(); })));
}

// A session of the tiny hourglass through the public hb::Session interface.
struct SessionRun {
    std::vector<double> losses;
    std::vector<std::vector<float>> state, gradients;
};

// `square_averages`, when given, is loaded as the optimizer state (one per trainable tensor).
SessionRun run_session(const std::vector<hb_option>& options, hb_placement placement, int steps,
                       const std::vector<std::vector<float>>* square_averages = nullptr) {
    const Graph graph = harness::model::build_hourglass(tiny_spec());
    const AbiGraph abi(graph);
    const hb_optimizer optimizer = torch_rmsprop();
    hb_session_desc desc{};
    desc.struct_size = sizeof(desc);
    desc.graph = abi.get();
    desc.optimizer = &optimizer;
    desc.device = "cpu";
    desc.placement = placement;
    desc.num_options = static_cast<int32_t>(options.size());
    desc.options = options.data();
    ReferenceSession session(desc);

    const auto state = harness::data::initial_state(graph, 7);
    const auto batches = harness::data::make_batches(graph, 7, 2);
    std::vector<const float*> tensors, inputs, targets;
    for (const auto& t : state) tensors.push_back(t.data());
    for (const auto& b : batches.inputs) inputs.push_back(b.data());
    for (const auto& b : batches.targets) targets.push_back(b.data());
    session.load_state(tensors.data());
    session.set_batches(2, inputs.data(), targets.data());
    if (square_averages) {
        std::vector<const float*> v;
        for (const auto& a : *square_averages) v.push_back(a.data());
        session.load_optimizer_state(v.data());
    }

    SessionRun run;
    for (int s = 0; s < steps; ++s) {
        const hb::StepResult r = session.step(s % 2);  // the batch, as the SDK passes it
        EXPECT_GE(r.forward_ms, 0);
        EXPECT_GE(r.backward_ms, 0);
        EXPECT_GE(r.optimizer_ms, 0);
        run.losses.push_back(r.loss);
    }
    run.state.resize(state.size());
    run.gradients.resize(state.size());
    std::vector<float*> out_state, out_gradients;
    for (size_t i = 0; i < state.size(); ++i) {
        const bool trainable = graph.tensors[i].trainable();
        run.state[i].resize(state[i].size());
        run.gradients[i].resize(trainable ? state[i].size() : 0);
        out_state.push_back(run.state[i].data());
        out_gradients.push_back(trainable ? run.gradients[i].data() : nullptr);
    }
    session.read_state(out_state.data());
    session.read_gradients(out_gradients.data());
    return run;
}

TEST(ReferenceSession, ResultsAreBitwiseIdenticalForOneAndTwoThreads) {
    const SessionRun one = run_session({{"threads", "1"}}, HB_PLACEMENT_DEVICE, 3);
    const SessionRun two = run_session({{"threads", "2"}}, HB_PLACEMENT_DEVICE, 3);
    ASSERT_EQ(one.losses.size(), 3u);
    for (size_t s = 0; s < one.losses.size(); ++s) EXPECT_EQ(one.losses[s], two.losses[s]) << s;
    EXPECT_TRUE(one.state == two.state);
    EXPECT_TRUE(one.gradients == two.gradients);
}

// Gradients that agree to float32 accuracy: each tensor within 1e-3 of its largest gradient. Conv
// biases followed by batch norm have a zero gradient in exact arithmetic and only rounding noise in
// float32, so the tolerance has a floor relative to the network's largest gradient.
template <class A, class B>
void expect_float32_close(const std::vector<std::vector<A>>& expected,
                          const std::vector<std::vector<B>>& actual, const Graph& graph) {
    ASSERT_EQ(expected.size(), actual.size());
    double network_scale = 0;
    for (const auto& g : expected)
        for (A v : g) network_scale = std::max(network_scale, std::fabs(double(v)));
    for (size_t i = 0; i < expected.size(); ++i) {
        ASSERT_EQ(expected[i].size(), actual[i].size()) << graph.tensors[i].name;
        double scale = 0, worst = 0;
        for (size_t k = 0; k < expected[i].size(); ++k) {
            scale = std::max(scale, std::fabs(double(expected[i][k])));
            worst = std::max(worst, std::fabs(double(expected[i][k]) - double(actual[i][k])));
        }
        EXPECT_LE(worst, 1e-3 * scale + 1e-5 * network_scale)
            << graph.tensors[i].name << ": largest gradient " << scale;
    }
}

// Only the first step is compared: RMSProp's first update is about lr / sqrt(1 - alpha) times the
// sign of the gradient, so gradients that are zero up to rounding (conv biases feeding batch norm)
// move their parameters in either direction depending on the rounding.
TEST(ReferenceSession, PortableAndFastestKernelsAgree) {
    const SessionRun portable =
        run_session({{"threads", "2"}, {"gemm_kernel", "portable"}}, HB_PLACEMENT_DEVICE, 1);
    const SessionRun fastest =
        run_session({{"threads", "2"}, {"gemm_kernel", "auto"}}, HB_PLACEMENT_DEVICE, 1);
    const Graph graph = harness::model::build_hourglass(tiny_spec());
    EXPECT_NEAR(portable.losses[0], fastest.losses[0], 1e-6 * std::fabs(portable.losses[0]));
    expect_float32_close(portable.gradients, fastest.gradients, graph);
}

// One step from a loaded squared-gradient average: p1 = p0 - lr g / (sqrt(a v0 + (1-a) g^2) + eps).
TEST(ReferenceSession, LoadedOptimizerStateDrivesTheUpdate) {
    const Graph graph = harness::model::build_hourglass(tiny_spec());
    const auto initial = harness::data::initial_state(graph, 7);
    std::vector<std::vector<float>> square_averages;
    for (size_t i = 0; i < graph.tensors.size(); ++i)
        if (graph.tensors[i].trainable())
            square_averages.emplace_back(initial[i].size(), 0.25f + 0.001f * float(i));
    const SessionRun run = run_session({}, HB_PLACEMENT_DEVICE, 1, &square_averages);
    const hb_optimizer o = torch_rmsprop();
    size_t k = 0;
    for (size_t i = 0; i < graph.tensors.size(); ++i) {
        if (!graph.tensors[i].trainable()) continue;
        const double v0 = square_averages[k++][0];
        const double g = run.gradients[i][0];
        const double v = double(o.alpha) * v0 + (1 - double(o.alpha)) * g * g;
        const double expected =
            initial[i][0] - double(o.learning_rate) * g / (std::sqrt(v) + o.eps);
        EXPECT_NEAR(run.state[i][0], expected, 1e-6 * (1 + std::fabs(expected)))
            << graph.tensors[i].name;
    }
}

TEST(ReferenceSession, HostPlacementComputesTheSameSteps) {
    const SessionRun device = run_session({{"threads", "2"}}, HB_PLACEMENT_DEVICE, 2);
    const SessionRun host = run_session({{"threads", "2"}}, HB_PLACEMENT_HOST, 2);
    EXPECT_EQ(device.losses, host.losses);
    EXPECT_TRUE(device.state == host.state);
}

// The float32 step agrees with the double-precision network on the loss and the gradients.
TEST(ReferenceSession, Float32StepAgreesWithDoublePrecision) {
    const Graph graph = harness::model::build_hourglass(tiny_spec());
    const AbiGraph abi(graph);
    const auto state = harness::data::initial_state(graph, 7);
    const auto batches = harness::data::make_batches(graph, 7, 2);
    ThreadPool pool(2);
    Network<double> network(*abi.get(), pool);
    for (int i = 0; i < network.num_tensors(); ++i) network.tensor(i) = to_double(state[i]);
    const std::vector<double> input = to_double(batches.inputs[0]);
    const std::vector<double> target = to_double(batches.targets[0]);
    const double loss = network.forward(input.data(), target.data());
    network.backward();

    const SessionRun run = run_session({{"threads", "2"}}, HB_PLACEMENT_DEVICE, 1);
    EXPECT_NEAR(run.losses[0], loss, 1e-5 * std::fabs(loss));
    std::vector<std::vector<double>> expected;
    for (int i = 0; i < network.num_tensors(); ++i) expected.push_back(network.gradient(i));
    expect_float32_close(expected, run.gradients, graph);
}

TEST(ReferenceSession, StepsUpdateParametersAndRunningStatistics) {
    const Graph graph = harness::model::build_hourglass(tiny_spec());
    const auto initial = harness::data::initial_state(graph, 7);
    const SessionRun run = run_session({}, HB_PLACEMENT_DEVICE, 2);
    for (size_t i = 0; i < graph.tensors.size(); ++i)
        EXPECT_NE(run.state[i], initial[i]) << graph.tensors[i].name;
}

hb_status create_status(const char* device, const std::vector<hb_option>& options,
                        std::string* message) {
    const Graph graph = harness::model::build_hourglass(tiny_spec());
    const AbiGraph abi(graph);
    const hb_optimizer optimizer = torch_rmsprop();
    hb_session_desc desc{};
    desc.struct_size = sizeof(desc);
    desc.graph = abi.get();
    desc.optimizer = &optimizer;
    desc.device = device;
    desc.num_options = static_cast<int32_t>(options.size());
    desc.options = options.data();
    try {
        ReferenceSession session(desc);
        return HB_OK;
    } catch (const hb::Error& e) {
        *message = e.what();
        return e.status();
    }
}

// A graph that does not hold together is rejected with the name of the layer at fault.
TEST(ReferenceNetwork, RejectsInconsistentGraphsNamingTheLayer) {
    const Graph graph = harness::model::build_hourglass(tiny_spec());
    const AbiGraph abi(graph);
    ThreadPool pool(1);
    auto error_of = [&](const std::function<void(std::vector<hb_layer>&)>& corrupt) {
        std::vector<hb_layer> layers(abi.get()->layers, abi.get()->layers + abi.get()->num_layers);
        corrupt(layers);
        hb_graph g = *abi.get();
        g.layers = layers.data();
        try {
            Network<float> network(g, pool);
        } catch (const hb::Error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    const int conv = graph.index_of_layer("stack0.hg.up1.conv2");
    ASSERT_GE(conv, 0);
    std::string message = error_of([&](std::vector<hb_layer>& l) { l[conv].in_channels += 1; });
    EXPECT_NE(message.find("stack0.hg.up1.conv2"), std::string::npos) << message;
    message = error_of([&](std::vector<hb_layer>& l) { l[conv].kernel = 5; });
    EXPECT_NE(message.find("stack0.hg.up1.conv2"), std::string::npos) << message;
    // A layer reading a value that is only computed later.
    message = error_of([&](std::vector<hb_layer>& l) { std::swap(l[conv], l[conv + 1]); });
    EXPECT_NE(message.find("is not computed before this layer"), std::string::npos) << message;
}

TEST(ReferenceSession, RejectsOtherDevicesAndUnknownOptions) {
    std::string message;
    EXPECT_EQ(create_status("cuda:0", {}, &message), HB_UNAVAILABLE);
    EXPECT_NE(message.find("cuda:0"), std::string::npos) << message;
    EXPECT_EQ(create_status("cpu", {{"thread", "2"}}, &message), HB_UNSUPPORTED);
    EXPECT_NE(message.find("thread"), std::string::npos) << message;
    EXPECT_EQ(create_status("cpu", {{"threads", "0"}}, &message), HB_UNSUPPORTED);
    EXPECT_EQ(create_status("cpu", {{"gemm_kernel", "fastest"}}, &message), HB_UNSUPPORTED);
    EXPECT_NE(message.find("gemm_kernel"), std::string::npos) << message;
    EXPECT_EQ(create_status("cpu", {{"threads", "2"}}, &message), HB_OK);
}

TEST(ReferenceSession, ReportsMemoryAndManifest) {
    const Graph graph = harness::model::build_hourglass(tiny_spec());
    const AbiGraph abi(graph);
    const hb_optimizer optimizer = torch_rmsprop();
    const std::vector<hb_option> options = {{"threads", "3"}};
    hb_session_desc desc{};
    desc.struct_size = sizeof(desc);
    desc.graph = abi.get();
    desc.optimizer = &optimizer;
    desc.device = "cpu";
    desc.num_options = 1;
    desc.options = options.data();
    ReferenceSession session(desc);
    EXPECT_GT(session.peak_memory_bytes(), static_cast<uint64_t>(graph.activation_bytes()));
    const std::string manifest = session.manifest_json();
    EXPECT_NE(manifest.find("\"math\": \"fp32\""), std::string::npos) << manifest;
    EXPECT_NE(manifest.find("\"threads\": 3"), std::string::npos) << manifest;
    EXPECT_NE(manifest.find("\"layout\": \"nchw\""), std::string::npos) << manifest;
}

}  // namespace
}  // namespace reference
