// The LibTorch backend's data-parallel steps (ABI 2.2) on the CPU, through the harness's own
// plugin classes: forward_backward followed by apply_update computes what step() computes, bit
// for bit; every gradient buffer is told final once, when it holds its gradient; and the update
// reads the gradients from the buffers.
#include "backend_comparison.hpp"
#include "data/initial_state.hpp"
#include "model/hourglass.hpp"
#include "plugin_host/plugin_library.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace {

using harness::plugin_host::PluginCallError;
using harness::plugin_host::PluginLibrary;
using harness::plugin_host::PluginSession;
using harness::testing::pointers;
using harness::testing::Tensors;

constexpr uint64_t kSeed = 3;

struct Problem {
    Problem()
        : graph(harness::model::build_hourglass(harness::testing::tiny_hourglass())),
          abi(graph),
          state(harness::data::initial_state(graph, kSeed)),
          batches(harness::data::make_batches(graph, kSeed, 2)) {}
    harness::model::Graph graph;
    harness::model::AbiGraph abi;
    Tensors state;
    harness::data::Batches batches;
};

const Problem& problem() {
    static const Problem p;
    return p;
}

// The plugin built here, or the one HB_LIBTORCH_PLUGIN names; null with the reason when there is
// none.
const PluginLibrary* library(std::string* reason) {
    static const std::string path = [] {
        const char* elsewhere = std::getenv("HB_LIBTORCH_PLUGIN");
        return elsewhere ? std::string(elsewhere) : std::string(HB_PLUGIN_DIR) + "/hb_libtorch.so";
    }();
    static const std::unique_ptr<PluginLibrary> loaded = [] {
        if (!std::filesystem::exists(path)) return std::unique_ptr<PluginLibrary>();
        return std::make_unique<PluginLibrary>(PluginLibrary::load(path));
    }();
    const std::string why = HB_LIBTORCH_SKIP_REASON;
    if (!loaded) *reason = (why.empty() ? "plugin libtorch not built" : why) + ": no " + path;
    return loaded.get();
}

#define SKIP_WITHOUT_PLUGIN()                                         \
    do {                                                              \
        std::string reason;                                           \
        if (!library(&reason)) GTEST_SKIP() << "skipped: " << reason; \
    } while (0)

struct Run {
    std::vector<double> losses;
    Tensors state;
};

// A CPU session of the problem, its state and batches loaded. One thread, so that two runs of
// the same computation agree bit for bit.
class Session {
public:
    explicit Session(const hb_optimizer& optimizer,
                     std::vector<std::pair<std::string, std::string>> options = {})
        : optimizer_(optimizer), settings_(std::move(options)) {
        settings_.emplace_back("threads", "1");
        for (const auto& kv : settings_) options_.push_back({kv.first.c_str(), kv.second.c_str()});
        const Problem& p = problem();
        std::string reason;
        session_ = std::make_unique<PluginSession>(
            *library(&reason), harness::testing::session_desc(p.abi, optimizer_, options_, "cpu"));
        session_->load_state(pointers(p.state).data());
        session_->set_batches(static_cast<int32_t>(p.batches.inputs.size()),
                              pointers(p.batches.inputs).data(),
                              pointers(p.batches.targets).data());
    }

    PluginSession& operator*() { return *session_; }
    PluginSession* operator->() { return session_.get(); }

    Tensors state() {
        const harness::model::Graph& graph = problem().graph;
        Tensors out(graph.tensors.size());
        std::vector<float*> buffers;
        for (size_t i = 0; i < out.size(); ++i) {
            out[i].resize(static_cast<size_t>(graph.tensors[i].elements()));
            buffers.push_back(out[i].data());
        }
        session_->read_state(buffers.data());
        return out;
    }

    // The gradients of the last step by tensor; empty for a running statistic.
    Tensors gradients() {
        const harness::model::Graph& graph = problem().graph;
        Tensors out(graph.tensors.size());
        std::vector<float*> buffers;
        for (size_t i = 0; i < out.size(); ++i) {
            if (graph.tensors[i].trainable())
                out[i].resize(static_cast<size_t>(graph.tensors[i].elements()));
            buffers.push_back(graph.tensors[i].trainable() ? out[i].data() : nullptr);
        }
        session_->read_gradients(buffers.data());
        return out;
    }

    std::vector<hb_gradient_buffer> buffers() {
        void* stream = reinterpret_cast<void*>(1);
        std::vector<hb_gradient_buffer> b =
            session_->gradient_buffers(*problem().abi.get(), &stream);
        EXPECT_EQ(stream, nullptr) << "host buffers are ordered by no stream";
        return b;
    }

private:
    hb_optimizer optimizer_;
    std::vector<std::pair<std::string, std::string>> settings_;
    std::vector<hb_option> options_;
    std::unique_ptr<PluginSession> session_;
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<float> contents(const hb_gradient_buffer& b) {
    return std::vector<float>(b.data, b.data + b.elements);
}

TEST(LibTorchSplitStep, IsAnnounced) {
    SKIP_WITHOUT_PLUGIN();
    std::string reason;
    EXPECT_TRUE(library(&reason)->can_split_step());
}

class LibTorchSplitStepModes
    : public ::testing::TestWithParam<std::vector<std::pair<std::string, std::string>>> {};

// Two steps as halves against two whole steps, from the same start: the same losses, gradients,
// parameters and running statistics, bit for bit. With momentum and weight decay, so that every
// part of the update reads the gradients.
TEST_P(LibTorchSplitStepModes, HalvesComputeWhatStepComputes) {
    SKIP_WITHOUT_PLUGIN();
    const hb_optimizer optimizer = harness::testing::rmsprop(HB_RMSPROP_TORCH, 0.9f, 1e-4f);
    Session whole(optimizer, GetParam());
    Session halves(optimizer, GetParam());
    halves.buffers();
    const harness::model::Graph& graph = problem().graph;
    for (int32_t k = 0; k < 2; ++k) {
        const hb_step_result expected = whole->step(k);
        const hb_step_result first = halves->forward_backward(k, nullptr);
        const hb_step_result second = halves->apply_update();
        EXPECT_EQ(first.loss, expected.loss) << "step " << k;
        EXPECT_GE(first.forward_ms, 0);
        EXPECT_GE(first.backward_ms, 0);
        EXPECT_LT(first.optimizer_ms, 0);
        EXPECT_GE(second.optimizer_ms, 0);
        EXPECT_LT(second.forward_ms, 0);
        const Tensors state = halves.state(), expected_state = whole.state();
        const Tensors gradients = halves.gradients(), expected_gradients = whole.gradients();
        for (size_t i = 0; i < graph.tensors.size(); ++i) {
            EXPECT_TRUE(same_bits(state[i], expected_state[i]))
                << graph.tensors[i].name << " after step " << k;
            EXPECT_TRUE(same_bits(gradients[i], expected_gradients[i]))
                << "the gradient of " << graph.tensors[i].name << " in step " << k;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Options, LibTorchSplitStepModes,
                         ::testing::Values(std::vector<std::pair<std::string, std::string>>{},
                                           std::vector<std::pair<std::string, std::string>>{
                                               {"layout", "nhwc"}, {"foreach", "true"}}));

// One buffer per trainable tensor, in host memory, the same for the session's life; each told
// final exactly once per forward_backward, in list order (the order backward completes them),
// during the backward pass and before forward_backward returns, and holding then what it holds
// at the end: the gradient read_gradients reads.
TEST(LibTorchSplitStep, TellsOfEveryBufferOnceWhenFinal) {
    SKIP_WITHOUT_PLUGIN();
    Session session(harness::testing::rmsprop());
    const std::vector<hb_gradient_buffer> buffers = session.buffers();
    const harness::model::Graph& graph = problem().graph;
    for (const hb_gradient_buffer& b : buffers) {
        EXPECT_EQ(b.memory, HB_MEMORY_HOST);
        EXPECT_EQ(b.elements, graph.tensors[static_cast<size_t>(b.tensor)].elements());
    }
    for (int32_t k = 0; k < 3; ++k) {
        std::vector<int32_t> told;
        std::vector<std::vector<float>> when_told(buffers.size());
        bool last_pending_at_first = false;
        session->forward_backward(k, [&](int32_t i) {
            told.push_back(i);
            ASSERT_GE(i, 0);
            ASSERT_LT(static_cast<size_t>(i), buffers.size());
            when_told[static_cast<size_t>(i)] = contents(buffers[static_cast<size_t>(i)]);
            if (told.size() == 1) {
                const std::vector<float> last = contents(buffers.back());
                last_pending_at_first =
                    std::all_of(last.begin(), last.end(), [](float v) { return v == 0; });
            }
        });
        ASSERT_EQ(told.size(), buffers.size()) << "step " << k;
        EXPECT_TRUE(last_pending_at_first)
            << "the first buffer is told of before the backward pass reaches the last one";
        for (size_t i = 0; i < told.size(); ++i) EXPECT_EQ(told[i], static_cast<int32_t>(i));
        const Tensors gradients = session.gradients();
        for (size_t i = 0; i < buffers.size(); ++i) {
            const std::vector<float> now = contents(buffers[i]);
            const std::string& name = graph.tensors[static_cast<size_t>(buffers[i].tensor)].name;
            EXPECT_TRUE(same_bits(when_told[i], now)) << name << " changed after it was final";
            EXPECT_TRUE(same_bits(gradients[static_cast<size_t>(buffers[i].tensor)], now))
                << name << ": read_gradients reads something else";
        }
        session->apply_update();
        const std::vector<hb_gradient_buffer> again = session.buffers();
        ASSERT_EQ(again.size(), buffers.size());
        for (size_t i = 0; i < buffers.size(); ++i) EXPECT_EQ(again[i].data, buffers[i].data);
    }
}

// The update reads the gradients from the buffers: with all of them zeroed, the torch variant's
// RMSProp without momentum or weight decay leaves every parameter as it was.
TEST(LibTorchSplitStep, UpdateReadsTheBuffers) {
    SKIP_WITHOUT_PLUGIN();
    Session session(harness::testing::rmsprop(HB_RMSPROP_TORCH));
    const std::vector<hb_gradient_buffer> buffers = session.buffers();
    const harness::model::Graph& graph = problem().graph;
    const Tensors before = session.state();
    session->forward_backward(0, nullptr);
    for (const hb_gradient_buffer& b : buffers)
        std::memset(b.data, 0, static_cast<size_t>(b.elements) * sizeof(float));
    session->apply_update();
    const Tensors after = session.state();
    for (size_t i = 0; i < graph.tensors.size(); ++i) {
        if (graph.tensors[i].trainable()) {
            EXPECT_TRUE(same_bits(after[i], before[i])) << graph.tensors[i].name;
        }
    }

    session->forward_backward(1, nullptr);
    session->apply_update();
    const Tensors moved = session.state();
    size_t changed = 0;
    for (size_t i = 0; i < graph.tensors.size(); ++i)
        changed += graph.tensors[i].trainable() && !same_bits(moved[i], before[i]);
    EXPECT_GT(changed, 0u) << "the gradients left in place move the parameters";
}

// A profiled split step is one step's events, the update's among them, read after apply_update.
TEST(LibTorchSplitStep, ProfilesBothHalvesAsOneStep) {
    SKIP_WITHOUT_PLUGIN();
    Session session(harness::testing::rmsprop());
    session->set_profiling(true);
    session->forward_backward(0, nullptr);
    session->apply_update();
    size_t forward = 0, backward = 0, update = 0;
    for (const hb_event& e : session->read_events()) {
        forward += e.phase == HB_PHASE_FORWARD;
        backward += e.phase == HB_PHASE_BACKWARD || e.phase == HB_PHASE_BACKWARD_DATA ||
                    e.phase == HB_PHASE_BACKWARD_WEIGHTS;
        update += e.phase == HB_PHASE_UPDATE;
    }
    EXPECT_GT(forward, 0u);
    EXPECT_GT(backward, 0u);
    EXPECT_GT(update, 0u);
    session->set_profiling(false);
    session->step(1);
    EXPECT_TRUE(session->read_events().empty());
}

// fp64 keeps float64 gradients, which no float32 buffer can hold: refused, saying why.
TEST(LibTorchSplitStep, RefusesFloat64) {
    SKIP_WITHOUT_PLUGIN();
    Session session(harness::testing::rmsprop(), {{"math", "fp64"}});
    void* stream = nullptr;
    try {
        session->gradient_buffers(*problem().abi.get(), &stream);
        ADD_FAILURE() << "gradient_buffers accepted fp64";
    } catch (const PluginCallError& e) {
        EXPECT_EQ(e.status(), HB_UNSUPPORTED);
        EXPECT_NE(std::string(e.what()).find("fp64"), std::string::npos) << e.what();
    }
    try {
        session->forward_backward(0, nullptr);
        ADD_FAILURE() << "forward_backward accepted fp64";
    } catch (const PluginCallError& e) {
        EXPECT_EQ(e.status(), HB_UNSUPPORTED);
    }
    EXPECT_GT(session->step(0).loss, 0) << "whole steps still work";
}

}  // namespace
