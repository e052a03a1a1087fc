// The reference backend on whole stacked-hourglass graphs built by the harness: gradients of the
// training loss against central finite differences (in double), and the float32 session through
// its public interface (determinism across thread counts, placements, errors).
#include "backend_comparison.hpp"
#include "data/initial_state.hpp"
#include "model/hourglass.hpp"
#include "session.hpp"
#include "training_step.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace hb_reference {
namespace {

using harness::model::AbiGraph;
using harness::model::Graph;
using harness::model::HourglassSpec;

using harness::testing::rmsprop;
using harness::testing::Trace;

HourglassSpec tiny_spec() {
    return harness::testing::tiny_hourglass();
}

// The reference's network on a host state of its own, as its session builds them.
template <class T>
struct Executor {
    Executor(const hb_graph& source, ThreadPool& pool)
        : graph(hb::import_graph(source, {"reference", true})),
          state(graph, hb_optimizer{}),
          network(graph, state, pool) {}
    hb::Graph graph;
    hb::HostState<T> state;
    TrainingStep<T> network;
};

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
    Executor<double> executor(*abi.get(), pool);
    TrainingStep<double>& network = executor.network;
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

TEST(ReferenceHourglass, TheInputsGradientMatchesFiniteDifferences) {
    const Graph graph = harness::model::build_hourglass(tiny_spec());
    const AbiGraph abi(graph);
    const auto state = harness::data::initial_state(graph, 42);
    const auto batches = harness::data::make_batches(graph, 42, 1);
    std::vector<double> input = to_double(batches.inputs[0]);
    const std::vector<double> target = to_double(batches.targets[0]);

    ThreadPool pool(2);
    Executor<double> executor(*abi.get(), pool);
    TrainingStep<double>& network = executor.network;
    for (int i = 0; i < network.num_tensors(); ++i) network.tensor(i) = to_double(state[i]);
    network.set_input_gradient(true);
    network.forward(input.data(), target.data());
    network.backward();
    const std::vector<double> analytic = network.input_gradient();
    ASSERT_EQ(analytic.size(), input.size());
    const auto n = static_cast<int64_t>(input.size());
    for (int64_t at : {int64_t{0}, n / 3, n / 2 + 7, n - 1}) {
        const double h = 1e-6, saved = input[at];
        input[at] = saved + h;
        const double plus = network.forward(input.data(), target.data());
        input[at] = saved - h;
        const double minus = network.forward(input.data(), target.data());
        input[at] = saved;
        const double numeric = (plus - minus) / (2 * h);
        EXPECT_NEAR(analytic[at], numeric, 1e-7 + 1e-5 * std::fabs(numeric))
            << "input[" << at << "]";
    }
}

// A session of the tiny hourglass through the public hb::Session interface.
// `square_averages`, when given, is loaded as the optimizer state (one per trainable tensor).
Trace run_session(const std::vector<hb_option>& options, hb_placement placement, int steps,
                  const harness::testing::Tensors* square_averages = nullptr) {
    const Graph graph = harness::model::build_hourglass(tiny_spec());
    const AbiGraph abi(graph);
    const hb_optimizer optimizer = rmsprop();
    Session session(harness::testing::session_desc(abi, optimizer, options, "cpu", placement));
    const auto state = harness::data::initial_state(graph, 7);
    const auto batches = harness::data::make_batches(graph, 7, 2);
    Trace run =
        harness::testing::run_steps(session, {graph, state, batches, square_averages}, steps);
    for (const hb::StepResult& r : run.steps) {
        EXPECT_GE(r.forward_ms, 0);
        EXPECT_GE(r.backward_ms, 0);
        EXPECT_GE(r.optimizer_ms, 0);
    }
    return run;
}

TEST(ReferenceSession, ResultsAreBitwiseIdenticalForOneAndTwoThreads) {
    const Trace one = run_session({{"threads", "1"}}, HB_PLACEMENT_DEVICE, 3);
    const Trace two = run_session({{"threads", "2"}}, HB_PLACEMENT_DEVICE, 3);
    ASSERT_EQ(one.losses.size(), 3u);
    for (size_t s = 0; s < one.losses.size(); ++s) EXPECT_EQ(one.losses[s], two.losses[s]) << s;
    EXPECT_TRUE(one.states == two.states);
    EXPECT_TRUE(one.gradients == two.gradients);
}

// Gradients that agree to float32 accuracy: each tensor within 1e-3 of its largest gradient, or
// of 1e-2 of the network's largest. Conv biases followed by batch norm have a zero gradient in
// exact arithmetic and only rounding noise in float32, hence the floor; the loss within `loss`.
harness::check::Tolerance float32_gradients(double loss) {
    return harness::testing::tight_tolerance("float32 gradients", loss, 1e-3, 0, 1e-2);
}

// The loss and the gradients of a run's first step, as `harness check` captures them.
harness::check::StepCapture first_step(const Graph& graph, const Trace& run) {
    harness::check::StepCapture c = harness::testing::capture_after(graph, run, 1);
    c.state.clear();
    return c;
}

// Only the first step is compared: RMSProp's first update is about lr / sqrt(1 - alpha) times the
// sign of the gradient, so gradients that are zero up to rounding (conv biases feeding batch norm)
// move their parameters in either direction depending on the rounding.
TEST(ReferenceSession, PortableAndFastestKernelsAgree) {
    const Trace portable =
        run_session({{"threads", "2"}, {"gemm_kernel", "portable"}}, HB_PLACEMENT_DEVICE, 1);
    const Trace fastest =
        run_session({{"threads", "2"}, {"gemm_kernel", "auto"}}, HB_PLACEMENT_DEVICE, 1);
    const Graph graph = harness::model::build_hourglass(tiny_spec());
    EXPECT_TRUE(harness::testing::conforms(first_step(graph, fastest), first_step(graph, portable),
                                           float32_gradients(1e-6)));
}

// One step from a loaded squared-gradient average: p1 = p0 - lr g / (sqrt(a v0 + (1-a) g^2) + eps).
TEST(ReferenceSession, LoadedOptimizerStateDrivesTheUpdate) {
    const Graph graph = harness::model::build_hourglass(tiny_spec());
    const auto initial = harness::data::initial_state(graph, 7);
    std::vector<std::vector<float>> square_averages;
    for (size_t i = 0; i < graph.tensors.size(); ++i)
        if (graph.tensors[i].trainable())
            square_averages.emplace_back(initial[i].size(), 0.25f + 0.001f * float(i));
    const Trace run = run_session({}, HB_PLACEMENT_DEVICE, 1, &square_averages);
    const hb_optimizer o = rmsprop();
    size_t k = 0;
    for (size_t i = 0; i < graph.tensors.size(); ++i) {
        if (!graph.tensors[i].trainable()) continue;
        const double v0 = square_averages[k++][0];
        const double g = run.gradients[0][i][0];
        const double v = double(o.alpha) * v0 + (1 - double(o.alpha)) * g * g;
        const double expected =
            initial[i][0] - double(o.learning_rate) * g / (std::sqrt(v) + o.eps);
        EXPECT_NEAR(run.states[0][i][0], expected, 1e-6 * (1 + std::fabs(expected)))
            << graph.tensors[i].name;
    }
}

TEST(ReferenceSession, HostPlacementComputesTheSameSteps) {
    const Trace device = run_session({{"threads", "2"}}, HB_PLACEMENT_DEVICE, 2);
    const Trace host = run_session({{"threads", "2"}}, HB_PLACEMENT_HOST, 2);
    EXPECT_EQ(device.losses, host.losses);
    EXPECT_TRUE(device.states == host.states);
}

// The float32 step agrees with the double-precision network on the loss and the gradients.
TEST(ReferenceSession, Float32StepAgreesWithDoublePrecision) {
    const Graph graph = harness::model::build_hourglass(tiny_spec());
    const AbiGraph abi(graph);
    const auto state = harness::data::initial_state(graph, 7);
    const auto batches = harness::data::make_batches(graph, 7, 2);
    ThreadPool pool(2);
    Executor<double> executor(*abi.get(), pool);
    TrainingStep<double>& network = executor.network;
    for (int i = 0; i < network.num_tensors(); ++i) network.tensor(i) = to_double(state[i]);
    const std::vector<double> input = to_double(batches.inputs[0]);
    const std::vector<double> target = to_double(batches.targets[0]);
    const double loss = network.forward(input.data(), target.data());
    network.backward();

    harness::check::StepCapture expected;
    expected.losses = {loss};
    for (int i = 0; i < network.num_tensors(); ++i)
        if (graph.tensors[i].trainable())
            expected.gradients[graph.tensors[i].name].assign(network.gradient(i).begin(),
                                                             network.gradient(i).end());
    const Trace run = run_session({{"threads", "2"}}, HB_PLACEMENT_DEVICE, 1);
    EXPECT_TRUE(
        harness::testing::conforms(first_step(graph, run), expected, float32_gradients(1e-5)));
}

TEST(ReferenceSession, StepsUpdateParametersAndRunningStatistics) {
    const Graph graph = harness::model::build_hourglass(tiny_spec());
    const auto initial = harness::data::initial_state(graph, 7);
    const Trace run = run_session({}, HB_PLACEMENT_DEVICE, 2);
    for (size_t i = 0; i < graph.tensors.size(); ++i)
        EXPECT_NE(run.states.back()[i], initial[i]) << graph.tensors[i].name;
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
            const Executor<float> executor(g, pool);
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
    harness::testing::expect_cpu_session_checks_its_description<Session>(tiny_spec());
    std::string message;
    EXPECT_EQ(harness::testing::creation_status<Session>(tiny_spec(), "cpu",
                                                         {{"gemm_kernel", "fastest"}}, &message),
              HB_UNSUPPORTED);
    EXPECT_NE(message.find("gemm_kernel"), std::string::npos) << message;
    // The oracle's precision takes no float32 kernel and no random rounding.
    EXPECT_EQ(harness::testing::creation_status<Session>(
                  tiny_spec(), "cpu", {{"math", "fp64"}, {"gemm_kernel", "avx2_fma"}}, &message),
              HB_UNSUPPORTED);
    EXPECT_NE(message.find("avx2_fma"), std::string::npos) << message;
    EXPECT_EQ(harness::testing::creation_status<Session>(
                  tiny_spec(), "cpu", {{"math", "fp64"}, {"rounding_seed", "3"}}, &message),
              HB_UNSUPPORTED);
    EXPECT_NE(message.find("rounding_seed"), std::string::npos) << message;
}

TEST(ReferenceSession, ReportsMemoryAndManifest) {
    const Graph graph = harness::model::build_hourglass(tiny_spec());
    const AbiGraph abi(graph);
    const hb_optimizer optimizer = rmsprop();
    const std::vector<hb_option> options = {{"threads", "3"}};
    Session session(harness::testing::session_desc(abi, optimizer, options));
    EXPECT_GT(session.peak_memory_bytes(), static_cast<uint64_t>(graph.activation_bytes()));
    const std::string manifest = session.manifest_json();
    EXPECT_NE(manifest.find("\"math\": \"fp32\""), std::string::npos) << manifest;
    EXPECT_NE(manifest.find("\"threads\": 3"), std::string::npos) << manifest;
    EXPECT_NE(manifest.find("\"layout\": \"nchw\""), std::string::npos) << manifest;
}

}  // namespace
}  // namespace hb_reference
