// The cuDNN backend through its C ABI, loaded with dlopen as the harness loads it: its description
// and, without a GPU, a clean HB_UNAVAILABLE; with one, its training step against the reference
// backend on the check network (losses, every gradient after the first step, parameters and
// running statistics after the second), judged as `harness check` judges it, in each layout,
// fusion, graph, placement and math mode; its profiled steps' events (docs/design.md §3
// "Profiling"); its data-parallel steps (ABI 2.2): the halves compute what a step computes,
// every gradient buffer is told final once, and the update reads the buffers; and the gradient of
// its input batch on request (ABI 2.3).
#include "backend_comparison.hpp"
#include "check/check_runner.hpp"
#include "check_problem.hpp"
#include "loaded_plugin.hpp"
#include "session.hpp"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using harness::check::StepCapture;
using harness::check::Tolerance;
using harness::check::tolerance_for;
using harness::testing::rmsprop;

const hb_plugin_api& plugin_api() {
    static const hb_plugin_api& api = harness::testing::load_plugin(
        harness::testing::plugin_path("hb_cudnn.so", "HB_CUDNN_PLUGIN"));
    return api;
}

const hb_plugin_info& plugin_info() {
    return harness::testing::describe(plugin_api());
}

#define SKIP_WITHOUT_CUDA() HB_SKIP_WITHOUT_DEVICE(plugin_api(), "cuda:0")

const harness::testing::CheckProblem& problem() {
    return harness::testing::check_problem();
}

// The problem's batches, handed to `session`.
void set_problem_batches(hb::Session& session) {
    const auto& b = problem().batches;
    session.set_batches(static_cast<int32_t>(b.inputs.size()),
                        harness::testing::pointers(b.inputs).data(),
                        harness::testing::pointers(b.targets).data());
}

struct StepMode {
    std::string name;
    std::vector<std::pair<std::string, std::string>> options;
    hb_placement placement = HB_PLACEMENT_DEVICE;
    hb_rmsprop_variant variant = HB_RMSPROP_TORCH;
    std::string math() const {
        for (const auto& kv : options)
            if (kv.first == "math") return kv.second;
        return "fp32";
    }
    friend std::ostream& operator<<(std::ostream& out, const StepMode& m) { return out << m.name; }
};

hb_session_desc describe_session(const StepMode& s, const hb_optimizer& o,
                                 std::vector<hb_option>& options, const char* device) {
    options.clear();
    for (const auto& kv : s.options) options.push_back({kv.first.c_str(), kv.second.c_str()});
    return harness::testing::session_desc(problem().abi, o, options, device, s.placement);
}

// Two reference steps, as `harness check` captures them, with these options besides its threads
// (the oracle's precision, or a member of the rounding-noise ensemble).
StepCapture reference_run(hb_rmsprop_variant variant,
                          const std::map<std::string, std::string>& settings) {
    const hb_optimizer o = rmsprop(variant);
    std::vector<hb_option> options;
    StepMode plain;
    plain.variant = variant;
    plain.options = {{"threads", "4"}};
    for (const auto& kv : settings) plain.options.push_back(kv);
    const std::unique_ptr<hb::Session> session =
        hb_reference::make_session(describe_session(plain, o, options, "cpu"));
    const auto& p = problem();
    return harness::testing::capture_after(
        p.graph, harness::testing::run_steps(*session, {p.graph, p.state, p.batches}, 2), 2);
}

// The oracle's step and the rounding-noise ensemble at `bits`.
StepCapture oracle_run(hb_rmsprop_variant variant) {
    return reference_run(variant, {{"math", "fp64"}});
}
std::vector<StepCapture> ensemble_runs(hb_rmsprop_variant variant, int bits) {
    std::vector<StepCapture> members;
    for (int m = 0; m < harness::check::kEnsembleSize; ++m)
        members.push_back(reference_run(variant, harness::check::ensemble_member_options(m, bits)));
    return members;
}

StepCapture cudnn_run(const StepMode& s) {
    const hb_optimizer o = rmsprop(s.variant);
    std::vector<hb_option> options;
    harness::testing::AbiSession session(plugin_api(), describe_session(s, o, options, "cuda:0"));
    if (session.status() != HB_OK) throw std::runtime_error("create_session: " + session.error());
    const auto& p = problem();
    const harness::testing::Trace run =
        harness::testing::run_steps(session, {p.graph, p.state, p.batches}, 2);
    for (const hb::StepResult& r : run.steps) {
        EXPECT_GT(r.forward_ms, 0);
        EXPECT_GT(r.backward_ms, 0);
        EXPECT_GT(r.optimizer_ms, 0);
    }
    EXPECT_GT(session.peak_memory_bytes(), 0u);
    const std::string manifest = session.manifest_json();
    EXPECT_NE(manifest.find("\"convolutions\""), std::string::npos);
    EXPECT_NE(manifest.find("\"math\": \"" + s.math() + "\""), std::string::npos) << manifest;
    // bf16 normalises with the backend's own kernels; otherwise cuDNN's Ex calls, unless the
    // mode asks for the legacy ones.
    const bool legacy = std::find(s.options.begin(), s.options.end(),
                                  std::make_pair(std::string("batchnorm"),
                                                 std::string("legacy"))) != s.options.end();
    if (s.math() != "bf16") {
        EXPECT_EQ(manifest.find("\"batchnorm_ex_layers\": 0,") != std::string::npos, legacy)
            << manifest;
    }
    return harness::testing::capture_after(p.graph, run, 2);
}

class CudnnStep : public ::testing::TestWithParam<StepMode> {};

// What `harness check` decides, in process: against the float64 oracle, the mode's tolerance or
// the rounding-noise ensemble's at the mode's precision.
TEST_P(CudnnStep, PassesTheCheckAgainstTheReference) {
    SKIP_WITHOUT_CUDA();
    const StepMode& s = GetParam();
    const Tolerance tolerance = tolerance_for(s.math());
    const StepCapture expected = oracle_run(s.variant);
    const std::vector<StepCapture> ensemble = ensemble_runs(s.variant, tolerance.significand_bits);
    EXPECT_TRUE(harness::testing::conforms(cudnn_run(s), expected, tolerance, &ensemble));
}

INSTANTIATE_TEST_SUITE_P(
    Modes, CudnnStep,
    ::testing::Values(StepMode{"fp32_nchw", {}}, StepMode{"fp32_nhwc", {{"layout", "nhwc"}}},
                      StepMode{"fused_nhwc", {{"layout", "nhwc"}, {"fuse_batchnorm_relu", "true"}}},
                      StepMode{"graphs", {{"cuda_graphs", "true"}}},
                      StepMode{"graphs_host", {{"cuda_graphs", "true"}}, HB_PLACEMENT_HOST},
                      StepMode{"host_nhwc", {{"layout", "nhwc"}}, HB_PLACEMENT_HOST},
                      StepMode{"tensorflow", {}, HB_PLACEMENT_DEVICE, HB_RMSPROP_TENSORFLOW},
                      // cuDNN's legacy calls: the fallback where it declines the Ex batch norm.
                      StepMode{"legacy_calls",
                               {{"convolution_api", "legacy"}, {"batchnorm_api", "legacy"}}},
                      StepMode{"legacy_calls_nhwc",
                               {{"convolution_api", "legacy"},
                                {"batchnorm_api", "legacy"},
                                {"layout", "nhwc"},
                                {"fuse_batchnorm_relu", "true"}}},
                      StepMode{"tf32", {{"math", "tf32"}}}, StepMode{"bf16", {{"math", "bf16"}}},
                      StepMode{"bf16_nhwc_fused_graphs",
                               {{"math", "bf16"},
                                {"layout", "nhwc"},
                                {"fuse_batchnorm_relu", "true"},
                                {"cuda_graphs", "true"}},
                               HB_PLACEMENT_HOST}),
    [](const ::testing::TestParamInfo<StepMode>& mode) { return mode.param.name; });

// ------------------------------------------------------------------------------ profiling

void set_profiling(harness::testing::AbiSession& session, bool enabled) {
    if (plugin_api().set_profiling(session.get(), enabled ? 1 : 0) != HB_OK)
        throw std::runtime_error(std::string("set_profiling: ") +
                                 plugin_api().session_error(session.get()));
}

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

// ------------------------------------------------------------------------ data-parallel steps

void check_call(harness::testing::AbiSession& session, const char* what, hb_status status) {
    if (status != HB_OK)
        throw std::runtime_error(std::string(what) + ": " +
                                 plugin_api().session_error(session.get()));
}

void check_cuda(cudaError_t status, const char* what) {
    if (status != cudaSuccess)
        throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

struct Buffers {
    std::vector<hb_gradient_buffer> list;
    cudaStream_t stream = nullptr;
};

Buffers gradient_buffers(harness::testing::AbiSession& session) {
    const hb_gradient_buffers* b = nullptr;
    check_call(session, "gradient_buffers", plugin_api().gradient_buffers(session.get(), &b));
    Buffers out;
    out.stream = static_cast<cudaStream_t>(b->stream);
    for (int32_t i = 0; i < b->count; ++i) {
        hb_gradient_buffer buffer{};
        std::memcpy(&buffer, reinterpret_cast<const char*>(b->buffers) + size_t(i) * b->buffer_size,
                    std::min<size_t>(b->buffer_size, sizeof buffer));
        out.list.push_back(buffer);
    }
    return out;
}

struct Told {
    std::vector<int32_t> buffers;
};

void tell(void* context, int32_t buffer) {
    static_cast<Told*>(context)->buffers.push_back(buffer);
}

hb_step_result forward_backward(harness::testing::AbiSession& session, int32_t batch,
                                Told* told = nullptr) {
    hb_step_result r{};
    check_call(
        session, "forward_backward",
        plugin_api().forward_backward(session.get(), batch, told ? tell : nullptr, told, &r));
    return r;
}

hb_step_result apply_update(harness::testing::AbiSession& session) {
    hb_step_result r{};
    check_call(session, "apply_update", plugin_api().apply_update(session.get(), &r));
    return r;
}

harness::testing::Tensors read_state(harness::testing::AbiSession& session) {
    const harness::model::Graph& graph = problem().graph;
    harness::testing::Tensors out(graph.tensors.size());
    std::vector<float*> buffers;
    for (size_t i = 0; i < out.size(); ++i) {
        out[i].resize(size_t(graph.tensors[i].elements()));
        buffers.push_back(out[i].data());
    }
    session.read_state(buffers.data());
    return out;
}

std::vector<float> device_contents(const hb_gradient_buffer& b) {
    std::vector<float> out(size_t(b.elements));
    check_cuda(cudaMemcpy(out.data(), b.data, out.size() * sizeof(float), cudaMemcpyDeviceToHost),
               "cudaMemcpy");
    return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() &&
           (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// The losses and state of `steps` steps from the problem's start (square averages from zero, the
// torch variant's), whole or in halves, in one session: its convolution algorithms were measured
// once, so both runs use the same ones.
StepCapture split_run(harness::testing::AbiSession& session, bool halves, int steps) {
    const auto& p = problem();
    session.load_state(harness::testing::pointers(p.state).data());
    harness::testing::Tensors zeros;
    for (const auto& t : p.graph.tensors)
        if (t.trainable()) zeros.emplace_back(size_t(t.elements()), 0.0f);
    session.load_optimizer_state(harness::testing::pointers(zeros).data());
    StepCapture c;
    for (int32_t k = 0; k < steps; ++k) {
        if (halves) {
            c.losses.push_back(forward_backward(session, k).loss);
            apply_update(session);
        } else {
            c.losses.push_back(session.step(k).loss);
        }
    }
    const harness::testing::Tensors state = read_state(session);
    for (size_t i = 0; i < state.size(); ++i) c.state[p.graph.tensors[i].name] = state[i];
    return c;
}

bool same_capture(const StepCapture& a, const StepCapture& b) {
    if (a.losses != b.losses) return false;
    for (const auto& [name, values] : a.state)
        if (!same_bits(values, b.state.at(name))) return false;
    return true;
}

class CudnnSplitStep : public ::testing::TestWithParam<StepMode> {
protected:
    // A session of the mode with the problem's batches.
    std::unique_ptr<harness::testing::AbiSession> open(const hb_optimizer& o) {
        const StepMode& s = GetParam();
        auto session = std::make_unique<harness::testing::AbiSession>(
            plugin_api(), describe_session(s, o, options_, "cuda:0"));
        if (session->status() != HB_OK)
            throw std::runtime_error("create_session: " + session->error());
        const auto& p = problem();
        session->load_state(harness::testing::pointers(p.state).data());
        set_problem_batches(*session);
        return session;
    }
    std::vector<hb_option> options_;
};

// Two steps in halves against two whole steps from the same start: bit for bit where the whole
// steps repeat themselves bit for bit (cuDNN may pick algorithms that add in any order), else
// within fp32's check tolerance.
TEST_P(CudnnSplitStep, HalvesComputeWhatStepComputes) {
    SKIP_WITHOUT_CUDA();
    auto session = open(rmsprop(HB_RMSPROP_TORCH));
    const StepCapture whole = split_run(*session, false, 2);
    const StepCapture again = split_run(*session, false, 2);
    const StepCapture halves = split_run(*session, true, 2);
    if (same_capture(whole, again))
        EXPECT_TRUE(same_capture(halves, whole));
    else
        EXPECT_TRUE(harness::testing::conforms(halves, whole, tolerance_for(GetParam().math())));
}

// One buffer per trainable tensor, in device memory on the session's stream, the same for the
// session's life; each told final once per forward_backward, in list order, before it returns;
// holding then the gradient read_gradients reads.
TEST_P(CudnnSplitStep, TellsOfEveryBufferOnce) {
    SKIP_WITHOUT_CUDA();
    auto session = open(rmsprop(HB_RMSPROP_TORCH));
    const Buffers buffers = gradient_buffers(*session);
    ASSERT_NE(buffers.stream, nullptr);
    const harness::model::Graph& graph = problem().graph;
    size_t trainable = 0;
    for (const auto& t : graph.tensors) trainable += t.trainable();
    ASSERT_EQ(buffers.list.size(), trainable);
    for (const hb_gradient_buffer& b : buffers.list) {
        EXPECT_EQ(b.memory, HB_MEMORY_DEVICE);
        EXPECT_EQ(b.elements, graph.tensors[size_t(b.tensor)].elements());
    }
    for (int32_t k = 0; k < 2; ++k) {
        Told told;
        const hb_step_result r = forward_backward(*session, k, &told);
        EXPECT_GT(r.forward_ms, 0);
        EXPECT_GT(r.backward_ms, 0);
        ASSERT_EQ(told.buffers.size(), buffers.list.size());
        for (size_t i = 0; i < told.buffers.size(); ++i)
            EXPECT_EQ(told.buffers[i], static_cast<int32_t>(i));
        check_cuda(cudaStreamSynchronize(buffers.stream), "cudaStreamSynchronize");
        harness::testing::Tensors gradients(graph.tensors.size());
        std::vector<float*> out;
        for (size_t i = 0; i < graph.tensors.size(); ++i) {
            if (graph.tensors[i].trainable())
                gradients[i].resize(size_t(graph.tensors[i].elements()));
            out.push_back(graph.tensors[i].trainable() ? gradients[i].data() : nullptr);
        }
        session->read_gradients(out.data());
        // The session's layout may order a tensor's elements otherwise (nhwc): compare them sorted.
        for (const hb_gradient_buffer& b : buffers.list) {
            std::vector<float> device = device_contents(b);
            std::vector<float> host = gradients[size_t(b.tensor)];
            std::sort(device.begin(), device.end());
            std::sort(host.begin(), host.end());
            EXPECT_TRUE(same_bits(device, host)) << graph.tensors[size_t(b.tensor)].name;
        }
        EXPECT_GT(apply_update(*session).optimizer_ms, 0);
        const Buffers again = gradient_buffers(*session);
        for (size_t i = 0; i < buffers.list.size(); ++i)
            EXPECT_EQ(again.list[i].data, buffers.list[i].data);
    }
}

// The update reads the gradients from the buffers: zeroed on the session's stream, the torch
// variant without momentum or weight decay leaves every parameter as it was.
TEST_P(CudnnSplitStep, UpdateReadsTheBuffers) {
    SKIP_WITHOUT_CUDA();
    auto session = open(rmsprop(HB_RMSPROP_TORCH));
    const Buffers buffers = gradient_buffers(*session);
    const harness::model::Graph& graph = problem().graph;
    const harness::testing::Tensors before = read_state(*session);
    forward_backward(*session, 0);
    for (const hb_gradient_buffer& b : buffers.list)
        check_cuda(cudaMemsetAsync(b.data, 0, size_t(b.elements) * sizeof(float), buffers.stream),
                   "cudaMemsetAsync");
    apply_update(*session);
    const harness::testing::Tensors after = read_state(*session);
    for (size_t i = 0; i < graph.tensors.size(); ++i) {
        if (graph.tensors[i].trainable()) {
            EXPECT_TRUE(same_bits(after[i], before[i])) << graph.tensors[i].name;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(
    Modes, CudnnSplitStep,
    ::testing::Values(StepMode{"fp32_nchw", {}},
                      StepMode{"host_nhwc_fused",
                               {{"layout", "nhwc"}, {"fuse_batchnorm_relu", "true"}},
                               HB_PLACEMENT_HOST},
                      StepMode{"bf16", {{"math", "bf16"}}}),
    [](const ::testing::TestParamInfo<StepMode>& mode) { return mode.param.name; });

// ------------------------------------------------------------------------ the input's gradient

// The reference's gradient of the loss with respect to batch 0 after one step from the start, as
// `harness check` captures it, with the reference's options `settings`: float64 (the oracle) or a
// rounding seed (an ensemble member).
StepCapture reference_input_gradient(const std::map<std::string, std::string>& settings) {
    const hb_optimizer o = rmsprop(HB_RMSPROP_TORCH);
    std::vector<hb_option> options;
    StepMode plain;
    plain.options = {{"threads", "4"}};
    for (const auto& kv : settings) plain.options.push_back(kv);
    hb_session_desc desc = describe_session(plain, o, options, "cpu");
    desc.input_gradient = 1;
    const std::unique_ptr<hb::Session> session = hb_reference::make_session(desc);
    const auto& p = problem();
    session->load_state(harness::testing::pointers(p.state).data());
    set_problem_batches(*session);
    session->step(0);
    StepCapture c;
    c.input_gradient.resize(p.batches.inputs[0].size());
    session->read_input_gradient(c.input_gradient.data());
    return c;
}

StepCapture read_input_gradient(harness::testing::AbiSession& session) {
    StepCapture c;
    c.input_gradient.resize(problem().batches.inputs[0].size());
    check_call(session, "read_input_gradient",
               plugin_api().read_input_gradient(session.get(), c.input_gradient.data()));
    return c;
}

class CudnnInputGradient : public ::testing::TestWithParam<StepMode> {};

// Asked for it, each step computes the gradient of its input batch, read back as NCHW float32
// within the mode's tolerance of the reference's: after steps from the start (eager, then, with
// cuda_graphs, captured and replayed) and, where the mode splits a step, after a forward_backward,
// whose update leaves it as it was.
TEST_P(CudnnInputGradient, MatchesTheReference) {
    SKIP_WITHOUT_CUDA();
    const StepMode& s = GetParam();
    const hb_optimizer o = rmsprop(s.variant);
    std::vector<hb_option> options;
    hb_session_desc desc = describe_session(s, o, options, "cuda:0");
    desc.input_gradient = 1;
    harness::testing::AbiSession session(plugin_api(), desc);
    ASSERT_EQ(session.status(), HB_OK) << session.error();
    const auto& p = problem();
    set_problem_batches(session);
    const Tolerance tolerance = tolerance_for(s.math());
    const StepCapture expected = reference_input_gradient({{"math", "fp64"}});
    std::vector<StepCapture> ensemble;
    for (int m = 0; m < harness::check::kEnsembleSize; ++m)
        ensemble.push_back(reference_input_gradient(
            harness::check::ensemble_member_options(m, tolerance.significand_bits)));
    // The gradient of a step is its forward's and backward's, which neither the optimizer state
    // nor the running statistics change: every step from the start state computes the same one.
    for (int k = 1; k <= 3; ++k) {
        session.load_state(harness::testing::pointers(p.state).data());
        session.step(0);
        EXPECT_TRUE(
            harness::testing::conforms(read_input_gradient(session), expected, tolerance, &ensemble))
            << "step " << k;
    }
    const std::string manifest = session.manifest_json();
    EXPECT_NE(manifest.find("\"input_gradient\": true"), std::string::npos) << manifest;

    const bool graphs = std::find(s.options.begin(), s.options.end(),
                                  std::make_pair(std::string("cuda_graphs"),
                                                 std::string("true"))) != s.options.end();
    if (graphs) return;  // a captured step does not split
    session.load_state(harness::testing::pointers(p.state).data());
    forward_backward(session, 0);
    const StepCapture half = read_input_gradient(session);
    EXPECT_TRUE(harness::testing::conforms(half, expected, tolerance, &ensemble))
        << "forward_backward";
    apply_update(session);
    EXPECT_TRUE(same_bits(read_input_gradient(session).input_gradient, half.input_gradient))
        << "the update changed the input's gradient";
}

// The graph API and cuDNN's legacy calls, in each layout, with the batch on the host or the
// device, captured, and in bf16.
INSTANTIATE_TEST_SUITE_P(
    Modes, CudnnInputGradient,
    ::testing::Values(StepMode{"fp32_nchw", {}},
                      StepMode{"legacy_calls_nhwc",
                               {{"convolution_api", "legacy"},
                                {"batchnorm_api", "legacy"},
                                {"layout", "nhwc"},
                                {"fuse_batchnorm_relu", "true"}}},
                      StepMode{"legacy_calls", {{"convolution_api", "legacy"}}},
                      StepMode{"graphs", {{"cuda_graphs", "true"}}},
                      StepMode{"host_nhwc_fused",
                               {{"layout", "nhwc"}, {"fuse_batchnorm_relu", "true"}},
                               HB_PLACEMENT_HOST},
                      StepMode{"bf16", {{"math", "bf16"}}},
                      StepMode{"bf16_nhwc_fused_graphs",
                               {{"math", "bf16"},
                                {"layout", "nhwc"},
                                {"fuse_batchnorm_relu", "true"},
                                {"cuda_graphs", "true"}},
                               HB_PLACEMENT_HOST}),
    [](const ::testing::TestParamInfo<StepMode>& mode) { return mode.param.name; });

// Not asked for it, a session computes no input gradient, holds no memory for it, and refuses to
// read one, saying why; asked, it reads one after a step only.
TEST(CudnnPlugin, ReadsTheInputGradientOnlyWhenAskedFor) {
    SKIP_WITHOUT_CUDA();
    const hb_optimizer o = rmsprop(HB_RMSPROP_TORCH);
    const auto& p = problem();
    uint64_t memory[2] = {0, 0};
    for (const bool asked : {false, true}) {
        std::vector<hb_option> options;
        hb_session_desc desc = describe_session(StepMode{}, o, options, "cuda:0");
        desc.input_gradient = asked ? 1 : 0;
        harness::testing::AbiSession session(plugin_api(), desc);
        ASSERT_EQ(session.status(), HB_OK) << session.error();
        session.load_state(harness::testing::pointers(p.state).data());
        set_problem_batches(session);
        std::vector<float> gradient(p.batches.inputs[0].size());
        EXPECT_NE(plugin_api().read_input_gradient(session.get(), gradient.data()), HB_OK)
            << "no step has run";
        EXPECT_GT(session.step(0).loss, 0);
        const hb_status status = plugin_api().read_input_gradient(session.get(), gradient.data());
        const std::string message = plugin_api().session_error(session.get());
        if (asked) {
            EXPECT_EQ(status, HB_OK) << message;
        } else {
            EXPECT_EQ(status, HB_UNSUPPORTED);
            EXPECT_NE(message.find("input_gradient"), std::string::npos) << message;
        }
        const std::string manifest = session.manifest_json();
        EXPECT_NE(manifest.find(std::string("\"input_gradient\": ") + (asked ? "true" : "false")),
                  std::string::npos)
            << manifest;
        memory[asked ? 1 : 0] = session.peak_memory_bytes();
    }
    EXPECT_LT(memory[0], memory[1]) << "the input's gradient has a buffer of its own";
}

// A captured step holds forward, backward and update in one graph, and a profiled step's
// operations are held to the whole step's order: both refuse to split, saying so.
TEST(CudnnPlugin, RefusesToSplitWhatCannotSplit) {
    SKIP_WITHOUT_CUDA();
    const hb_optimizer o = rmsprop(HB_RMSPROP_TORCH);
    const auto& p = problem();
    for (const bool graphs : {true, false}) {
        std::vector<hb_option> options;
        StepMode s;
        if (graphs) s.options = {{"cuda_graphs", "true"}};
        harness::testing::AbiSession session(plugin_api(),
                                             describe_session(s, o, options, "cuda:0"));
        ASSERT_EQ(session.status(), HB_OK) << session.error();
        session.load_state(harness::testing::pointers(p.state).data());
        set_problem_batches(session);
        if (!graphs) set_profiling(session, true);
        hb_step_result r{};
        EXPECT_EQ(plugin_api().forward_backward(session.get(), 0, nullptr, nullptr, &r),
                  HB_UNSUPPORTED);
        const std::string message = plugin_api().session_error(session.get());
        EXPECT_NE(message.find(graphs ? "cuda_graphs" : "profil"), std::string::npos) << message;
        EXPECT_GT(session.step(0).loss, 0) << "whole steps still work";
    }
}

TEST(CudnnPlugin, Describes) {
    const hb_plugin_info& info = plugin_info();
    EXPECT_EQ(std::string(info.name), "cudnn");
    EXPECT_EQ(std::string(info.version), "1.0.0");
    bool cudnn = false;
    for (int32_t i = 0; i < info.num_libraries; ++i)
        cudnn = cudnn || std::string(info.libraries[i].name) == "cuDNN";
    EXPECT_TRUE(cudnn);
    ASSERT_GE(info.num_devices, 1);
    EXPECT_EQ(std::string(info.devices[0].name), "cuda:0");
    EXPECT_TRUE(info.capabilities & HB_CAP_GRADIENTS);
    EXPECT_TRUE(info.capabilities & HB_CAP_PROFILE);
    EXPECT_NE(plugin_api().set_profiling, nullptr);
    EXPECT_NE(plugin_api().read_events, nullptr);
    EXPECT_TRUE(info.capabilities & HB_CAP_DATA_PARALLEL);
    EXPECT_NE(plugin_api().gradient_buffers, nullptr);
    EXPECT_NE(plugin_api().forward_backward, nullptr);
    EXPECT_NE(plugin_api().apply_update, nullptr);
    EXPECT_TRUE(info.capabilities & HB_CAP_INPUT_GRADIENT);
    EXPECT_NE(plugin_api().read_input_gradient, nullptr);
}

TEST(CudnnPlugin, WithoutDeviceSessionIsUnavailable) {
    const std::string reason = harness::testing::unavailable_reason(plugin_api(), "cuda:0");
    if (reason.empty()) GTEST_SKIP() << "a CUDA device is present";
    const hb_optimizer o = rmsprop(HB_RMSPROP_TORCH);
    std::vector<hb_option> options;
    const hb_session_desc desc = describe_session(StepMode{}, o, options, "cuda:0");
    hb_session* session = nullptr;
    EXPECT_EQ(plugin_api().create_session(&desc, &session), HB_UNAVAILABLE);
    EXPECT_EQ(session, nullptr);
    const std::string message = plugin_api().last_error();
    EXPECT_NE(message.find(reason), std::string::npos) << message;
}

TEST(CudnnPlugin, RejectsUnknownOptionsAndValues) {
    const hb_optimizer o = rmsprop(HB_RMSPROP_TORCH);
    std::vector<hb_option> options;
    for (const auto& kv :
         std::vector<std::pair<std::string, std::string>>{{"math", "fp16"}, {"tile", "4"}}) {
        StepMode s;
        s.options = {kv};
        const hb_session_desc desc = describe_session(s, o, options, "cuda:0");
        hb_session* session = nullptr;
        EXPECT_EQ(plugin_api().create_session(&desc, &session), HB_UNSUPPORTED) << kv.first;
    }
}

}  // namespace
