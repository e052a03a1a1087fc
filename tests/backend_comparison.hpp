// What the backend tests share: running a training session step by step (in process, or a built
// plugin through its C ABI), turning what it read back into the capture `harness check` compares,
// and asserting that comparison (harness/check/comparison.hpp, docs/design.md §7) — the one way a
// test holds a backend to the reference backend.
#pragma once

#include "check/comparison.hpp"
#include "data/initial_state.hpp"
#include "hb/plugin.hpp"
#include "model/graph.hpp"
#include "model/hourglass.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace harness::testing {

using Tensors = std::vector<std::vector<float>>;

// ------------------------------------------------------------------------------ the problem

// RMSProp with the learning rate of the configs, in PyTorch's form (alpha 0.99, eps 1e-8, square
// averages from 0) or TensorFlow's (alpha 0.9, eps 1e-10, square averages from 1).
inline hb_optimizer rmsprop(hb_rmsprop_variant variant = HB_RMSPROP_TORCH, float momentum = 0,
                            float weight_decay = 0) {
    hb_optimizer o{};
    o.variant = variant;
    o.learning_rate = 2.5e-4f;
    o.momentum = momentum;
    o.weight_decay = weight_decay;
    const bool torch = variant == HB_RMSPROP_TORCH;
    o.alpha = torch ? 0.99f : 0.9f;
    o.eps = torch ? 1e-8f : 1e-10f;
    o.initial_square_average = torch ? 0.0f : 1.0f;
    return o;
}

// A stacked hourglass small enough for a test: two stacks of depth 2, four joints, two images a
// batch; `features` channels on `input_size` pixels square.
inline model::HourglassSpec hourglass_spec(int features, int input_size) {
    model::HourglassSpec spec;
    spec.stacks = 2;
    spec.features = features;
    spec.depth = 2;
    spec.joints = 4;
    spec.input_size = input_size;
    spec.batch = 2;
    return spec;
}

// The hourglass most backend tests train (32 features, 64 pixels).
inline model::HourglassSpec small_hourglass() {
    return hourglass_spec(32, 64);
}

// The same network with fewer channels on smaller images, where a test is slow (16, 32).
inline model::HourglassSpec tiny_hourglass() {
    return hourglass_spec(16, 32);
}

template <class T>
std::vector<const T*> pointers(const std::vector<std::vector<T>>& buffers) {
    std::vector<const T*> out;
    for (const auto& b : buffers) out.push_back(b.data());
    return out;
}

// A session of `abi` on `device`; `options` must outlive the description.
inline hb_session_desc session_desc(const model::AbiGraph& abi, const hb_optimizer& optimizer,
                                    const std::vector<hb_option>& options,
                                    const char* device = "cpu",
                                    hb_placement placement = HB_PLACEMENT_DEVICE) {
    hb_session_desc desc{};
    desc.struct_size = sizeof(desc);
    desc.graph = abi.get();
    desc.optimizer = &optimizer;
    desc.device = device;
    desc.placement = placement;
    desc.num_options = static_cast<int32_t>(options.size());
    desc.options = options.data();
    desc.read_back = 1;  // run_steps reads the gradients after every step
    return desc;
}

// What creating an in-process `Session` of the hourglass `spec` on `device` with `options` gives:
// HB_OK, or the status of the error it throws, with its message in `message`.
template <class Session>
hb_status creation_status(const model::HourglassSpec& spec, const char* device,
                          const std::vector<hb_option>& options, std::string* message) {
    const model::Graph graph = model::build_hourglass(spec);
    const model::AbiGraph abi(graph);
    const hb_optimizer optimizer = rmsprop();
    try {
        Session session(session_desc(abi, optimizer, options, device));
        return HB_OK;
    } catch (const hb::Error& e) {
        *message = e.what();
        return e.status();
    }
}

// A CPU backend's session refuses another device and an unknown or invalid option, naming it,
// and takes a thread count.
template <class Session>
void expect_cpu_session_checks_its_description(const model::HourglassSpec& spec) {
    std::string message;
    EXPECT_EQ(creation_status<Session>(spec, "cuda:0", {}, &message), HB_UNAVAILABLE);
    EXPECT_NE(message.find("cuda:0"), std::string::npos) << message;
    EXPECT_EQ(creation_status<Session>(spec, "cpu", {{"thread", "2"}}, &message), HB_UNSUPPORTED);
    EXPECT_NE(message.find("thread"), std::string::npos) << message;
    EXPECT_EQ(creation_status<Session>(spec, "cpu", {{"threads", "0"}}, &message), HB_UNSUPPORTED);
    EXPECT_EQ(creation_status<Session>(spec, "cpu", {{"threads", "2"}}, &message), HB_OK);
}

// ------------------------------------------------------------------------------ the session

// A built plugin's session through its C ABI only (as the harness drives it), as an hb::Session.
// A failed call throws with the session's message; a failed creation is kept in status() and
// error(), and the session must not be used then.
class AbiSession : public hb::Session {
public:
    AbiSession(const hb_plugin_api& api, const hb_session_desc& desc) : api_(api) {
        status_ = api.create_session(&desc, &session_);
        if (status_ != HB_OK) error_ = api.last_error();
    }
    ~AbiSession() override {
        if (session_) api_.destroy_session(session_);
    }
    AbiSession(const AbiSession&) = delete;
    AbiSession& operator=(const AbiSession&) = delete;

    hb_status status() const { return status_; }
    const std::string& error() const { return error_; }
    hb_session* get() { return session_; }

    void load_state(const float* const* tensors) override {
        check("load_state", api_.load_state(live(), tensors));
    }
    void load_optimizer_state(const float* const* square_averages) override {
        check("load_optimizer_state", api_.load_optimizer_state(live(), square_averages));
    }
    void set_batches(int32_t count, const float* const* inputs,
                     const float* const* targets) override {
        check("set_batches", api_.set_batches(live(), count, inputs, targets));
    }
    hb::StepResult step(int32_t batch) override {
        hb_step_result r{};
        check("step", api_.step(live(), batch, &r));
        hb::StepResult out;
        out.loss = r.loss;
        out.forward_ms = r.forward_ms;
        out.backward_ms = r.backward_ms;
        out.optimizer_ms = r.optimizer_ms;
        return out;
    }
    void read_state(float* const* tensors) override {
        check("read_state", api_.read_state(live(), tensors));
    }
    void read_gradients(float* const* gradients) override {
        check("read_gradients", api_.read_gradients(live(), gradients));
    }
    uint64_t peak_memory_bytes() override {
        uint64_t bytes = 0;
        check("peak_memory", api_.peak_memory(live(), &bytes));
        return bytes;
    }
    std::string manifest_json() override {
        const char* json = nullptr;
        check("manifest", api_.manifest(live(), &json));
        return json;
    }

private:
    hb_session* live() {
        if (!session_) throw std::runtime_error("create_session: " + error_);
        return session_;
    }
    void check(const char* what, hb_status status) {
        if (status != HB_OK)
            throw std::runtime_error(std::string(what) + ": " + api_.session_error(session_));
    }

    const hb_plugin_api& api_;
    hb_session* session_ = nullptr;
    hb_status status_ = HB_ERROR;
    std::string error_;
};

// What a test reads back from a session: per step its result, the gradients after it (by tensor
// index; a running statistic has none) and every tensor after it.
struct Trace {
    std::vector<double> losses;
    std::vector<hb::StepResult> steps;
    std::vector<Tensors> gradients, states;
};

// Where a session starts: its weights and running statistics, its batches, and optionally the
// square averages of RMSProp (one per trainable tensor).
struct Start {
    const model::Graph& graph;
    const Tensors& state;
    const data::Batches& batches;
    const Tensors* square_averages = nullptr;
};

// Loads `start` into `session` and runs `steps` steps, step k on batch k modulo the batch count
// (as the SDK passes it), reading the gradients and the state back after each.
inline Trace run_steps(hb::Session& session, const Start& start, int steps) {
    const model::Graph& graph = start.graph;
    session.load_state(pointers(start.state).data());
    if (start.square_averages)
        session.load_optimizer_state(pointers(*start.square_averages).data());
    const auto batches = static_cast<int32_t>(start.batches.inputs.size());
    session.set_batches(batches, pointers(start.batches.inputs).data(),
                        pointers(start.batches.targets).data());
    Trace trace;
    for (int32_t k = 0; k < steps; ++k) {
        trace.steps.push_back(session.step(k % batches));
        trace.losses.push_back(trace.steps.back().loss);
        Tensors& gradients = trace.gradients.emplace_back(graph.tensors.size());
        Tensors& state = trace.states.emplace_back(graph.tensors.size());
        std::vector<float*> gradient_out, state_out;
        for (size_t i = 0; i < graph.tensors.size(); ++i) {
            const auto elements = static_cast<size_t>(graph.tensors[i].elements());
            const bool trainable = graph.tensors[i].trainable();
            gradients[i].resize(trainable ? elements : 0);
            state[i].resize(elements);
            gradient_out.push_back(trainable ? gradients[i].data() : nullptr);
            state_out.push_back(state[i].data());
        }
        session.read_gradients(gradient_out.data());
        session.read_state(state_out.data());
    }
    return trace;
}

// ----------------------------------------------------------------------------- the comparison

// What `harness check` captures of a trace cut after step `steps` (counted from 1): the losses up
// to it, every trainable tensor's gradient of step `gradient_step` (the first, as the check
// captures it, unless a test asks for another) and every tensor after step `steps`.
inline check::StepCapture capture_after(const model::Graph& graph, const Trace& trace, int steps,
                                        int gradient_step = 1) {
    check::StepCapture c;
    c.losses.assign(trace.losses.begin(), trace.losses.begin() + steps);
    for (size_t i = 0; i < graph.tensors.size(); ++i) {
        const std::string& name = graph.tensors[i].name;
        if (graph.tensors[i].trainable())
            c.gradients[name] = trace.gradients.at(static_cast<size_t>(gradient_step - 1))[i];
        c.state[name] = trace.states.at(static_cast<size_t>(steps - 1))[i];
    }
    return c;
}

// Part of a capture, for a comparison of its own: the losses and the gradients when asked for,
// and the state of the tensors for which `keep(tensor)` is true. Without gradients, compare()
// leaves no element of a parameter out as undetermined.
template <class Keep>
check::StepCapture part_of(const model::Graph& graph, check::StepCapture c, bool losses,
                           bool gradients, Keep keep) {
    if (!losses) c.losses.clear();
    if (!gradients) c.gradients.clear();
    for (const auto& t : graph.tensors)
        if (!keep(t)) c.state.erase(t.name);
    return c;
}

// No tensor's state.
inline bool no_state(const model::Tensor&) {
    return false;
}

// A tolerance tighter than a math mode's: relative errors of the loss, of every gradient
// (measured against at least `gradient_floor` times the largest gradient) and of every tensor
// after the last step (measured against at least `state_floor`).
inline check::Tolerance tight_tolerance(const std::string& label, double loss, double gradient,
                                        double state, double gradient_floor,
                                        double state_floor = 0) {
    check::Tolerance t = check::tolerance_for(hb::Math::fp32);
    t.label = label;
    t.loss = loss;
    t.gradient = gradient;
    t.state = state;
    t.gradient_floor = gradient_floor;
    t.state_floor = state_floor;
    return t;
}

// One line on a quantity: "gradient conv.weight: relative error 3e-05, tolerance 1e-05 (...)".
inline std::string describe(const check::Difference& d) {
    std::ostringstream out;
    out << d.quantity << ": relative error " << d.relative << ", tolerance " << d.tolerance
        << " (largest absolute difference " << d.max_abs << " against " << d.scale;
    if (d.noise > 0) out << "; the rounding-noise ensemble's spread " << d.noise;
    if (!d.determined) out << ", undetermined";
    if (d.undetermined > 0) out << "; " << d.undetermined << " elements undetermined";
    return out.str() + ")";
}

// The worst quantity of a comparison, against its tolerance.
inline std::string worst_quantity(const check::Comparison& c) {
    const check::Difference* d = c.worst_relative();
    return d ? describe(*d) : "nothing compared";
}

// Success when the comparison passes; otherwise its problem, or its worst quantity and every
// other one out of tolerance.
inline ::testing::AssertionResult passes(const check::Comparison& c) {
    if (!c.problem.empty()) return ::testing::AssertionFailure() << "cannot compare: " << c.problem;
    if (c.differences.empty()) return ::testing::AssertionFailure() << "nothing compared";
    if (c.pass) return ::testing::AssertionSuccess() << "worst " << worst_quantity(c);
    ::testing::AssertionResult failure = ::testing::AssertionFailure();
    failure << "not within " << c.tolerance.label << ": worst " << worst_quantity(c);
    for (const auto& d : c.differences)
        if (d.out_of_bounds() && &d != c.worst_relative()) failure << "\n  also " << describe(d);
    return failure;
}

// `candidate` against `baseline` as `harness check` compares them (with the rounding-noise
// ensemble when given): EXPECT_TRUE(conforms(...)).
inline ::testing::AssertionResult conforms(
    const check::StepCapture& candidate, const check::StepCapture& baseline,
    const check::Tolerance& tolerance, const std::vector<check::StepCapture>* ensemble = nullptr) {
    return passes(check::compare(
        candidate, baseline, tolerance,
        ensemble ? check::members_of(*ensemble) : std::vector<const check::StepCapture*>{}));
}

}  // namespace harness::testing
