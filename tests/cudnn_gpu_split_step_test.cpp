// The cuDNN plugin's data-parallel steps (ABI 2.2): the halves compute what a step computes, every
// gradient buffer is told final once, the update reads the buffers, and what cannot split refuses.
#include "backend_comparison.hpp"
#include "cudnn_gpu_session.hpp"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace cudnn_test;
using harness::check::StepCapture;
using harness::check::tolerance_for;
using harness::testing::rmsprop;

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

}  // namespace
