// The step in two halves (ABI 2.2) of the CPU plugins, through the harness's own wrapper: the
// gradient buffers, forward_backward's ready callbacks and apply_update reading the buffers, and
// step() computing the same bits as forward_backward followed by apply_update.
#include "backend_comparison.hpp"
#include "data/initial_state.hpp"
#include "model/hourglass.hpp"
#include "plugin_host/plugin_library.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace {

using harness::plugin_host::PluginCallError;
using harness::plugin_host::PluginLibrary;
using harness::plugin_host::PluginSession;
using harness::testing::pointers;
using harness::testing::rmsprop;
using harness::testing::Tensors;

struct Problem {
    harness::model::Graph graph =
        harness::model::build_hourglass(harness::testing::tiny_hourglass());
    harness::model::AbiGraph abi{graph};
    Tensors state = harness::data::initial_state(graph, 3);
    harness::data::Batches batches = harness::data::make_batches(graph, 3, 2);
};

const Problem& problem() {
    static const Problem p;
    return p;
}

bool trainable(int t) {
    return problem().graph.tensors[static_cast<size_t>(t)].trainable();
}

// Why the plugin `name` is not built here, from configure's note; empty when it is.
std::string not_built_reason(const std::string& name) {
    const std::string path = std::string(HB_PLUGIN_DIR) + "/hb_" + name;
    if (std::filesystem::exists(path + ".so")) return "";
    std::ifstream note(path + ".not-built");
    std::string reason;
    std::getline(note, reason);
    return "plugin " + name + " " + (reason.empty() ? "not built" : reason);
}

// The problem's session description; asking for the input's gradient when `input_gradient`.
hb_session_desc describe(const hb_optimizer& optimizer, const std::vector<hb_option>& options,
                         hb_placement placement, bool input_gradient) {
    hb_session_desc desc =
        harness::testing::session_desc(problem().abi, optimizer, options, "cpu", placement);
    desc.input_gradient = input_gradient ? 1 : 0;
    return desc;
}

// A session of the plugin on the problem, its state and batches loaded.
class Trainer {
public:
    Trainer(const PluginLibrary& library, const hb_optimizer& optimizer,
            hb_placement placement = HB_PLACEMENT_DEVICE, bool input_gradient = false)
        : optimizer_(optimizer),
          session_(library, describe(optimizer_, options_, placement, input_gradient)) {
        session_.load_state(pointers(problem().state).data());
        session_.set_batches(2, pointers(problem().batches.inputs).data(),
                             pointers(problem().batches.targets).data());
    }

    PluginSession& operator*() { return session_; }
    PluginSession* operator->() { return &session_; }

    std::vector<hb_gradient_buffer> buffers() {
        void* stream = &stream;
        std::vector<hb_gradient_buffer> b =
            session_.gradient_buffers(*problem().abi.get(), &stream);
        EXPECT_EQ(stream, nullptr);
        return b;
    }

    Tensors state() {
        Tensors out;
        for (const auto& t : problem().state) out.emplace_back(t.size());
        std::vector<float*> p;
        for (auto& t : out) p.push_back(t.data());
        session_.read_state(p.data());
        return out;
    }

    std::vector<float> input_gradient() {
        std::vector<float> out(problem().batches.inputs[0].size());
        session_.read_input_gradient(out.data());
        return out;
    }

    // By tensor index; empty for a running statistic.
    Tensors gradients() {
        Tensors out(problem().state.size());
        std::vector<float*> p;
        for (size_t t = 0; t < out.size(); ++t) {
            if (trainable(static_cast<int>(t))) out[t].resize(problem().state[t].size());
            p.push_back(out[t].empty() ? nullptr : out[t].data());
        }
        session_.read_gradients(p.data());
        return out;
    }

private:
    hb_optimizer optimizer_;
    std::vector<hb_option> options_ = {{"threads", "2"}};
    PluginSession session_;
};

std::vector<float> contents(const hb_gradient_buffer& b) {
    return {b.data, b.data + b.elements};
}

void expect_same_bits(const Tensors& a, const Tensors& b, const std::string& what) {
    ASSERT_EQ(a.size(), b.size()) << what;
    for (size_t t = 0; t < a.size(); ++t)
        EXPECT_TRUE(a[t].size() == b[t].size() &&
                    (a[t].empty() ||  // no gradient: a running statistic
                     std::memcmp(a[t].data(), b[t].data(), a[t].size() * sizeof(float)) == 0))
            << what << ": tensor " << problem().graph.tensors[t].name;
}

class SplitStep : public ::testing::TestWithParam<const char*> {
protected:
    void SetUp() override {
        const std::string reason = not_built_reason(GetParam());
        if (!reason.empty()) GTEST_SKIP() << reason;
        library_ = std::make_unique<PluginLibrary>(PluginLibrary::load(
            std::string(HB_PLUGIN_DIR) + "/hb_" + std::string(GetParam()) + ".so"));
    }
    const PluginLibrary& library() const { return *library_; }
    bool reference() const { return std::string(GetParam()) == "reference"; }

private:
    std::unique_ptr<PluginLibrary> library_;
};

TEST_P(SplitStep, IsAnnounced) {
    EXPECT_TRUE(library().info().capabilities & HB_CAP_DATA_PARALLEL);
    EXPECT_TRUE(library().can_split_step());
}

TEST_P(SplitStep, TwoHalvesComputeTheBitsOfStep) {
    struct Case {
        hb_optimizer optimizer;
        hb_placement placement;
    };
    const Case cases[] = {
        {rmsprop(HB_RMSPROP_TORCH), HB_PLACEMENT_DEVICE},
        {rmsprop(HB_RMSPROP_TORCH, 0.9f, 1e-4f), HB_PLACEMENT_DEVICE},
        {rmsprop(HB_RMSPROP_TENSORFLOW, 0.9f, 1e-4f), HB_PLACEMENT_HOST},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE("variant " + std::to_string(c.optimizer.variant) + ", momentum " +
                     std::to_string(c.optimizer.momentum) + ", placement " +
                     std::to_string(c.placement));
        Trainer whole(library(), c.optimizer, c.placement);
        Trainer halves(library(), c.optimizer, c.placement);
        for (int32_t k = 0; k < 2; ++k) {
            const hb_step_result step = whole->step(k);
            const hb_step_result first = halves->forward_backward(k, {});
            const hb_step_result second = halves->apply_update();
            EXPECT_EQ(first.loss, step.loss) << "step " << k;
            EXPECT_GE(first.forward_ms, 0);
            EXPECT_GE(first.backward_ms, 0);
            EXPECT_EQ(first.optimizer_ms, -1);
            EXPECT_GE(second.optimizer_ms, 0);
            EXPECT_GE(step.optimizer_ms, 0);
        }
        expect_same_bits(halves.state(), whole.state(), "state after two steps");
        expect_same_bits(halves.gradients(), whole.gradients(), "gradients of the second step");
    }
}

// The input's gradient (ABI 2.3): refused where the session was not asked for it or before a
// step; after forward_backward, what step() gives, and the update leaves it as it is.
TEST_P(SplitStep, TheInputsGradientIsReadWhereAskedAfterEitherKindOfStep) {
    ASSERT_TRUE(library().can_read_input_gradient());
    Trainer unasked(library(), rmsprop());
    unasked->step(0);
    try {
        unasked.input_gradient();
        ADD_FAILURE() << "a session not asked for the input's gradient gave it";
    } catch (const PluginCallError& e) {
        EXPECT_EQ(e.status(), HB_UNSUPPORTED) << e.what();
    }

    Trainer whole(library(), rmsprop(), HB_PLACEMENT_DEVICE, true);
    EXPECT_THROW(whole.input_gradient(), PluginCallError);  // no step yet
    whole->step(0);
    const std::vector<float> expected = whole.input_gradient();
    EXPECT_TRUE(std::any_of(expected.begin(), expected.end(), [](float g) { return g != 0; }));

    Trainer halves(library(), rmsprop(), HB_PLACEMENT_DEVICE, true);
    halves->forward_backward(0, {});
    EXPECT_EQ(halves.input_gradient(), expected);
    halves->apply_update();
    EXPECT_EQ(halves.input_gradient(), expected);
}

TEST_P(SplitStep, EveryBufferIsReadiedOnceInOrderWhenItsGradientIsFinal) {
    Trainer trainer(library(), rmsprop());
    const std::vector<hb_gradient_buffer> buffers = trainer.buffers();
    const auto count = static_cast<int32_t>(buffers.size());
    ASSERT_EQ(count, std::count_if(problem().graph.tensors.begin(), problem().graph.tensors.end(),
                                   [](const auto& t) { return t.trainable(); }));
    int previous_layer = static_cast<int>(problem().graph.layers.size());
    for (const hb_gradient_buffer& b : buffers) {
        const auto& tensor = problem().graph.tensors[static_cast<size_t>(b.tensor)];
        EXPECT_EQ(b.memory, HB_MEMORY_HOST) << tensor.name;
        EXPECT_GE(b.elements, tensor.elements()) << tensor.name;
        EXPECT_LE(tensor.layer, previous_layer) << tensor.name << ": not in reverse layer order";
        previous_layer = tensor.layer;
    }
    for (int32_t k = 0; k < 2; ++k) {
        std::vector<int32_t> readied;
        std::vector<std::vector<float>> at_ready(buffers.size());
        trainer->forward_backward(k, [&](int32_t i) {
            readied.push_back(i);
            ASSERT_TRUE(i >= 0 && i < count) << i;
            at_ready[static_cast<size_t>(i)] = contents(buffers[static_cast<size_t>(i)]);
        });
        std::vector<int32_t> in_order(buffers.size());
        for (int32_t i = 0; i < count; ++i) in_order[static_cast<size_t>(i)] = i;
        EXPECT_EQ(readied, in_order) << "forward_backward " << k;
        for (size_t i = 0; i < buffers.size() && readied == in_order; ++i)
            EXPECT_EQ(at_ready[i], contents(buffers[i]))
                << problem().graph.tensors[static_cast<size_t>(buffers[i].tensor)].name
                << " changed after it was readied";
        trainer->apply_update();
    }
    const std::vector<hb_gradient_buffer> again = trainer.buffers();
    ASSERT_EQ(again.size(), buffers.size());
    for (size_t i = 0; i < buffers.size(); ++i) {
        EXPECT_EQ(again[i].tensor, buffers[i].tensor);
        EXPECT_EQ(again[i].data, buffers[i].data);
        EXPECT_EQ(again[i].elements, buffers[i].elements);
    }
}

TEST_P(SplitStep, ReadGradientsReturnsWhatTheBuffersHold) {
    Trainer whole(library(), rmsprop());
    whole->step(0);
    const Tensors expected = whole.gradients();

    Trainer halves(library(), rmsprop());
    const std::vector<hb_gradient_buffer> buffers = halves.buffers();
    halves->forward_backward(0, {});
    expect_same_bits(halves.gradients(), expected, "read_gradients after forward_backward");
    for (const hb_gradient_buffer& b : buffers) {
        const std::vector<float>& canonical = expected[static_cast<size_t>(b.tensor)];
        std::vector<float> held = contents(b);
        if (reference()) {
            expect_same_bits({held}, {canonical}, "buffer");
            continue;
        }
        // Another layout holds the same values, and zeros in its padding.
        std::vector<float> values = canonical;
        values.resize(held.size(), 0.0f);
        std::sort(values.begin(), values.end());
        std::sort(held.begin(), held.end());
        EXPECT_EQ(held, values) << problem().graph.tensors[b.tensor].name;
    }

    for (const hb_gradient_buffer& b : buffers)
        for (int64_t i = 0; i < b.elements; ++i) b.data[i] *= 2;
    const Tensors doubled = halves.gradients();
    for (size_t t = 0; t < expected.size(); ++t)
        for (size_t i = 0; i < expected[t].size(); ++i)
            ASSERT_EQ(doubled[t][i], 2 * expected[t][i]) << problem().graph.tensors[t].name;
}

TEST_P(SplitStep, ApplyUpdateReadsTheBuffers) {
    const hb_optimizer optimizer = rmsprop(HB_RMSPROP_TORCH, 0, 0);
    Trainer zeroed(library(), optimizer);
    zeroed->forward_backward(0, {});
    for (const hb_gradient_buffer& b : zeroed.buffers())
        std::fill(b.data, b.data + b.elements, 0.0f);
    zeroed->apply_update();
    const Tensors unchanged = zeroed.state();
    for (size_t t = 0; t < unchanged.size(); ++t) {
        if (!trainable(static_cast<int>(t))) continue;
        EXPECT_EQ(unchanged[t], problem().state[t]) << problem().graph.tensors[t].name;
    }

    // Doubled buffers: the update of the doubled gradients, from square averages of 1.
    Tensors ones;
    for (size_t t = 0; t < problem().state.size(); ++t)
        if (trainable(static_cast<int>(t))) ones.emplace_back(problem().state[t].size(), 1.0f);
    Trainer plain(library(), optimizer), doubled(library(), optimizer);
    plain->load_optimizer_state(pointers(ones).data());
    doubled->load_optimizer_state(pointers(ones).data());
    plain->forward_backward(0, {});
    plain->apply_update();
    const std::vector<hb_gradient_buffer> buffers = doubled.buffers();
    doubled->forward_backward(0, {});
    for (const hb_gradient_buffer& b : buffers)
        for (int64_t i = 0; i < b.elements; ++i) b.data[i] *= 2;
    const Tensors gradients = doubled.gradients();
    doubled->apply_update();
    const Tensors once = plain.state(), twice = doubled.state();
    const float lr = optimizer.learning_rate, alpha = optimizer.alpha, eps = optimizer.eps;
    int64_t moved = 0;
    for (size_t t = 0; t < twice.size(); ++t) {
        if (!trainable(static_cast<int>(t))) continue;
        for (size_t i = 0; i < twice[t].size(); ++i) {
            const float p = problem().state[t][i], g = gradients[t][i];
            const float expected = p - lr * g / (std::sqrt(alpha + (1 - alpha) * g * g) + eps);
            ASSERT_NEAR(twice[t][i], expected, 1e-6f * std::abs(p) + 1e-3f * std::abs(p - expected))
                << problem().graph.tensors[t].name << "[" << i << "]";
            if (twice[t][i] != once[t][i]) ++moved;
        }
    }
    EXPECT_GT(moved, 0);
}

TEST_P(SplitStep, ApplyUpdateNeedsAForwardBackwardOfItsOwn) {
    Trainer trainer(library(), rmsprop());
    const auto expect_refused = [&](const char* when) {
        try {
            trainer->apply_update();
            ADD_FAILURE() << "apply_update " << when << " succeeded";
        } catch (const PluginCallError& e) {
            EXPECT_EQ(e.status(), HB_ERROR) << when;
            EXPECT_NE(std::string(e.what()).find("forward_backward"), std::string::npos)
                << e.what();
        }
    };
    expect_refused("in a new session");
    trainer->step(0);
    expect_refused("after a step");
    trainer->forward_backward(1, {});
    trainer->apply_update();
    expect_refused("twice for one forward_backward");
    const Tensors before = trainer.state();
    expect_refused("again");
    expect_same_bits(trainer.state(), before, "state after a refused apply_update");
}

TEST_P(SplitStep, ProfiledHalvesHaveTheEventsOfAStep) {
    Trainer whole(library(), rmsprop()), halves(library(), rmsprop());
    whole->set_profiling(true);
    halves->set_profiling(true);
    whole->step(0);
    halves->forward_backward(0, {});
    halves->apply_update();
    const auto names = [](const std::vector<hb_event>& events) {
        std::vector<std::string> out;
        for (const hb_event& e : events)
            out.push_back(std::string(e.name) + " layer " + std::to_string(e.layer) + " phase " +
                          std::to_string(e.phase));
        return out;
    };
    const std::vector<hb_event> step_events = whole->read_events();
    EXPECT_EQ(names(halves->read_events()), names(step_events));
    EXPECT_TRUE(std::any_of(step_events.begin(), step_events.end(),
                            [](const hb_event& e) { return e.phase == HB_PHASE_UPDATE; }));
}

INSTANTIATE_TEST_SUITE_P(CpuPlugins, SplitStep, ::testing::Values("reference", "onednn"),
                         [](const auto& plugin) { return std::string(plugin.param); });

}  // namespace
