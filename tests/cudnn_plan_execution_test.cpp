// The cuDNN backend's step plan carried out on the CPU: every activation and gradient at its
// planned arena offset, in the element type of the math mode, each backward operation writing or
// adding as the plan says, the fused batch norms writing the ReLU's output. The reference
// backend's kernels stand in for cuDNN, and the backend's own element arithmetic (kernel_math.hpp)
// does what its own kernels do, with bf16 rounding wherever bf16 math stores a value. One
// training step on the check config (configs/check.yaml) must then pass `harness check`'s
// comparison against the reference backend: with float32's tolerances in fp32 (also when the
// backend's own batch-norm kernels stand in for cuDNN's), with bf16's in bf16. A wrong lifetime in
// the arena plan, a missed accumulation or a wrong fusion shows up here, without a GPU.
#include "backend_comparison.hpp"
#include "check/check_runner.hpp"
#include "check_problem.hpp"
#include "kernel_math.hpp"
#include "layers.hpp"
#include "loaded_plugin.hpp"
#include "plan.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <ostream>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace hb_cudnn;
using Values = std::vector<float>;

using harness::testing::check_problem;

// One step of the reference backend, through its C ABI, with these options besides its threads
// (the oracle's precision, or a member of the rounding-noise ensemble); with the input's
// gradient when asked.
harness::check::StepCapture reference_step(const std::map<std::string, std::string>& settings,
                                           bool input_gradient) {
    const auto& p = check_problem();
    const harness::data::Batches first{{p.batches.inputs[0]}, {p.batches.targets[0]}};
    std::vector<hb_option> options = {{"threads", "2"}};
    for (const auto& [key, value] : settings) options.push_back({key.c_str(), value.c_str()});
    const hb_plugin_api& api =
        harness::testing::load_plugin(std::string(HB_PLUGIN_DIR) + "/hb_reference.so");
    hb_session_desc desc = harness::testing::session_desc(p.abi, p.config.optimizer, options);
    desc.input_gradient = input_gradient ? 1 : 0;
    harness::testing::AbiSession session(api, desc);
    if (session.status() != HB_OK) throw std::runtime_error(session.error());
    harness::check::StepCapture r = harness::testing::capture_after(
        p.graph, harness::testing::run_steps(session, {p.graph, p.state, first}, 1), 1);
    r.state.clear();  // the plan's execution stops before the update
    if (input_gradient) {
        r.input_gradient.resize(first.inputs[0].size());
        if (api.read_input_gradient(session.get(), r.input_gradient.data()) != HB_OK)
            throw std::runtime_error(api.session_error(session.get()));
    }
    return r;
}

hb_reference::Dims dims(const Shape& s) {
    return {s.n, s.c, s.h, s.w};
}

float bf16_rounded(float x) {
    return math::from_bf16(math::to_bf16(x));
}

// One training step (forward and backward) of a plan, as TrainingStep enqueues it, on the CPU.
class PlanExecutor {
public:
    // `own_batchnorm`: batch norm as the backend's own kernels compute it (what bf16 math runs),
    // else as cuDNN's (the reference's arithmetic).
    PlanExecutor(const Plan& plan, bool own_batchnorm)
        : plan_(plan),
          own_batchnorm_(own_batchnorm || plan.storage() == Storage::bf16),
          arena_plan_(plan_arena(plan.requests())),
          pool_(2),
          gemm_(pool_) {
        arena_.assign(static_cast<size_t>(arena_plan_.bytes), 0xAB);  // garbage, as on a device
        for (const auto& t : check_problem().state) parameters_.emplace_back(t);
    }

    harness::check::StepCapture step() {
        const auto& p = check_problem();
        input_ = p.batches.inputs[0];
        if (bf16())
            for (float& x : input_) x = bf16_rounded(x);
        target_ = p.batches.targets[0].data();
        loss_ = 0;
        gradients_.assign(plan_.tensors().size(), {});
        for (const LayerPlan& l : plan_.layers())
            if (!l.absorbed) forward(l);
        for (auto l = plan_.layers().rbegin(); l != plan_.layers().rend(); ++l)
            if (l->runs_backward) backward(*l);
        harness::check::StepCapture capture;
        capture.losses = {loss_};
        for (size_t t = 0; t < plan_.tensors().size(); ++t)
            if (plan_.tensors()[t].trainable)
                capture.gradients[plan_.tensors()[t].name] = gradients_[t];
        if (plan_.input_gradient()) {
            const ValuePlan& input = plan_.values()[static_cast<size_t>(plan_.input())];
            capture.input_gradient = input.gradient_buffer < 0
                                         ? Values(input_.size(), 0.0f)
                                         : load(input.gradient_buffer, input.shape.elements());
        }
        return capture;
    }

private:
    bool bf16() const { return plan_.storage() == Storage::bf16; }
    unsigned char* at(int request) {
        return arena_.data() + arena_plan_.offsets[static_cast<size_t>(request)];
    }

    // An arena buffer of activations or gradients as floats, and written back as the mode stores.
    Values load(int request, int64_t count) {
        Values out(static_cast<size_t>(count));
        if (bf16()) {
            const auto* b = reinterpret_cast<const math::bf16*>(at(request));
            for (size_t i = 0; i < out.size(); ++i) out[i] = math::load(b[i]);
        } else {
            std::memcpy(out.data(), at(request), out.size() * sizeof(float));
        }
        return out;
    }
    void store(int request, const Values& values) {
        if (bf16()) {
            auto* b = reinterpret_cast<math::bf16*>(at(request));
            for (size_t i = 0; i < values.size(); ++i) math::store(b[i], values[i]);
        } else {
            std::memcpy(at(request), values.data(), values.size() * sizeof(float));
        }
    }

    Values value(int v) {
        if (v == plan_.input()) return input_;
        const ValuePlan& value = plan_.values()[static_cast<size_t>(v)];
        return load(value.buffer, value.shape.elements());
    }
    void write_value(int v, const Values& values) {
        store(plan_.values()[static_cast<size_t>(v)].buffer, values);
    }
    // The gradient of input slot k of `l`: written, or added to what is there.
    void send_gradient(const LayerPlan& l, size_t k, Values g) {
        if (!l.input_gradient[k]) return;
        const ValuePlan& v = plan_.values()[static_cast<size_t>(l.inputs[k])];
        if (l.accumulate[k]) {
            const Values old = load(v.gradient_buffer, v.shape.elements());
            for (size_t i = 0; i < g.size(); ++i) g[i] += old[i];
        }
        store(v.gradient_buffer, g);
    }

    const Values& tensor(int t) const { return parameters_[static_cast<size_t>(t)]; }
    Values& tensor(int t) { return parameters_[static_cast<size_t>(t)]; }
    // A convolution's weight as the convolution reads it.
    Values convolution_weight(int t) const {
        Values w = tensor(t);
        if (bf16())
            for (float& x : w) x = bf16_rounded(x);
        return w;
    }
    float* saved(const LayerPlan& l) { return reinterpret_cast<float*>(at(l.saved)); }

    hb_reference::ConvShape conv_shape(const LayerPlan& l) const {
        return {dims(l.in), dims(l.out), l.kernel, l.stride, l.padding};
    }
    static int64_t channel(int64_t i, const Shape& s) { return (i / s.plane()) % s.c; }

    void forward(const LayerPlan& l) {
        const Values x = value(l.inputs[0]);
        Values y(static_cast<size_t>(l.out.elements()));
        switch (l.kind) {
            case HB_LAYER_CONV2D: {
                const hb_reference::ConvShape s = conv_shape(l);
                Values workspace(static_cast<size_t>(s.workspace_elements()));
                const Values w = convolution_weight(l.weight);
                hb_reference::conv2d_forward(gemm_, s, x.data(), w.data(),
                                             static_cast<const float*>(nullptr), y.data(),
                                             workspace.data());
                if (l.bias >= 0) {
                    // cuDNN writes the convolution; the bias is then added to what was stored.
                    write_value(l.writes, y);
                    y = value(l.writes);
                    for (size_t i = 0; i < y.size(); ++i)
                        y[i] += tensor(l.bias)[static_cast<size_t>(channel(int64_t(i), l.out))];
                }
                break;
            }
            case HB_LAYER_BATCHNORM:
                y = batchnorm_forward(l, x);
                break;
            case HB_LAYER_RELU:
                for (size_t i = 0; i < y.size(); ++i) y[i] = math::relu(x[i]);
                break;
            case HB_LAYER_MAXPOOL2D:
                hb_reference::maxpool2d_forward(pool_, dims(l.in), x.data(), y.data());
                break;
            case HB_LAYER_UPSAMPLE:
                hb_reference::upsample_forward(pool_, dims(l.in), x.data(), y.data());
                break;
            case HB_LAYER_ADD: {
                std::vector<Values> inputs;
                for (int v : l.inputs) inputs.push_back(value(v));
                std::vector<const float*> pointers;
                for (const Values& in : inputs) pointers.push_back(in.data());
                hb_reference::add_forward(pool_, l.out.elements(), pointers, y.data());
                break;
            }
            case HB_LAYER_MSE_LOSS:
                loss_ += hb_reference::mse_loss_forward(l.in.elements(), x.data(), target_,
                                                        l.loss_weight);
                return;
        }
        write_value(l.writes, y);
    }

    Values batchnorm_forward(const LayerPlan& l, const Values& x) {
        const int64_t C = l.in.c, count = l.in.n * l.in.plane();
        Values y(x.size());
        float* s = saved(l);
        Values &mean = tensor(l.running_mean), &var = tensor(l.running_var);
        const Values &gamma = tensor(l.weight), &beta = tensor(l.bias);
        if (own_batchnorm_) {
            std::vector<double> sum(static_cast<size_t>(C)), squares(static_cast<size_t>(C));
            for (size_t i = 0; i < x.size(); ++i) {
                const auto c = static_cast<size_t>(channel(int64_t(i), l.in));
                sum[c] += x[i];
                squares[c] += double(x[i]) * x[i];
            }
            std::vector<math::BatchNormForward> r;
            for (size_t c = 0; c < size_t(C); ++c) {
                r.push_back(math::batchnorm_forward_channel(sum[c], squares[c], double(count),
                                                            gamma[c], beta[c], mean[c], var[c],
                                                            l.momentum, l.eps));
                s[c] = r[c].mean;
                s[C + int64_t(c)] = r[c].inverse_deviation;
                mean[c] = r[c].running_mean;
                var[c] = r[c].running_var;
            }
            for (size_t i = 0; i < x.size(); ++i) {
                const auto c = static_cast<size_t>(channel(int64_t(i), l.in));
                y[i] = math::batchnorm_forward_element(x[i], r[c].scale, r[c].shift, l.fused_relu);
            }
            return y;
        }
        hb_reference::BatchStatistics stats;  // cuDNN's batch norm computes what the reference does
        hb_reference::batchnorm_forward(pool_, dims(l.in), {l.momentum, l.eps}, x.data(),
                                        gamma.data(), beta.data(), y.data(), mean.data(),
                                        var.data(), stats);
        for (int64_t c = 0; c < C; ++c) {
            s[c] = static_cast<float>(stats.mean[size_t(c)]);
            s[C + c] = static_cast<float>(stats.inv_std[size_t(c)]);
        }
        if (l.fused_relu)
            for (float& v : y) v = math::relu(v);
        return y;
    }

    void backward(const LayerPlan& l) {
        const Values x = value(l.inputs[0]);
        Values dy;
        if (l.kind != HB_LAYER_MSE_LOSS) {
            const ValuePlan& out = plan_.values()[static_cast<size_t>(l.writes)];
            dy = load(out.gradient_buffer, out.shape.elements());
        }
        Values dx(x.size(), 0.0f);
        switch (l.kind) {
            case HB_LAYER_CONV2D: {
                const hb_reference::ConvShape s = conv_shape(l);
                Values workspace(static_cast<size_t>(s.workspace_elements()));
                const Values w = convolution_weight(l.weight);
                Values dw(w.size(), 0.0f), db(static_cast<size_t>(l.out.c), 0.0f);
                hb_reference::conv2d_backward(gemm_, s, x.data(), w.data(), dy.data(),
                                              l.input_gradient[0] ? dx.data() : nullptr, dw.data(),
                                              l.bias >= 0 ? db.data() : nullptr, workspace.data());
                if (bf16())  // cuDNN writes the weight gradient in bf16, then it is widened
                    for (float& g : dw) g = bf16_rounded(g);
                gradients_[size_t(l.weight)] = dw;
                if (l.bias >= 0) gradients_[size_t(l.bias)] = db;
                send_gradient(l, 0, dx);
                return;
            }
            case HB_LAYER_BATCHNORM:
                batchnorm_backward(l, x, dy, dx);
                send_gradient(l, 0, dx);
                return;
            case HB_LAYER_RELU: {
                const Values y = value(l.writes);
                for (size_t i = 0; i < dx.size(); ++i) dx[i] = math::relu_gradient(y[i], dy[i]);
                send_gradient(l, 0, dx);
                return;
            }
            case HB_LAYER_MAXPOOL2D:
                hb_reference::maxpool2d_backward(pool_, dims(l.in), x.data(), dy.data(), dx.data());
                send_gradient(l, 0, dx);
                return;
            case HB_LAYER_UPSAMPLE:
                hb_reference::upsample_backward(pool_, dims(l.in), dy.data(), dx.data());
                send_gradient(l, 0, dx);
                return;
            case HB_LAYER_ADD:
                for (size_t k = 0; k < l.inputs.size(); ++k) send_gradient(l, k, dy);
                return;
            case HB_LAYER_MSE_LOSS:
                hb_reference::mse_loss_backward(pool_, l.in.elements(), x.data(), target_,
                                                l.loss_weight, dx.data());
                send_gradient(l, 0, dx);
                return;
        }
    }

    void batchnorm_backward(const LayerPlan& l, const Values& x, const Values& dy, Values& dx) {
        const int64_t C = l.in.c, count = l.in.n * l.in.plane();
        const float* s = saved(l);
        const Values& gamma = tensor(l.weight);
        Values g = dy;
        if (l.fused_relu) {
            const Values y = value(l.writes);
            for (size_t i = 0; i < g.size(); ++i)
                g[i] = math::batchnorm_output_gradient(dy[i], y[i], true);
        }
        Values dgamma(static_cast<size_t>(C), 0.0f), dbeta(static_cast<size_t>(C), 0.0f);
        if (own_batchnorm_) {
            std::vector<double> sum_g(static_cast<size_t>(C)), sum_g_x_hat(static_cast<size_t>(C));
            for (size_t i = 0; i < x.size(); ++i) {
                const auto c = static_cast<size_t>(channel(int64_t(i), l.in));
                sum_g[c] += g[i];
                sum_g_x_hat[c] += double(g[i]) * math::normalized(x[i], s[c], s[C + int64_t(c)]);
            }
            std::vector<math::BatchNormBackward> r;
            for (size_t c = 0; c < size_t(C); ++c) {
                r.push_back(math::batchnorm_backward_channel(
                    sum_g[c], sum_g_x_hat[c], double(count), gamma[c], s[C + int64_t(c)]));
                dgamma[c] = r[c].dgamma;
                dbeta[c] = r[c].dbeta;
            }
            for (size_t i = 0; i < x.size(); ++i) {
                const auto c = static_cast<size_t>(channel(int64_t(i), l.in));
                dx[i] = math::batchnorm_input_gradient(
                    g[i], math::normalized(x[i], s[c], s[C + int64_t(c)]), r[c].input_scale,
                    r[c].mean_g, r[c].mean_g_x_hat);
            }
        } else {
            hb_reference::BatchStatistics stats;
            for (int64_t c = 0; c < C; ++c) {
                stats.mean.push_back(s[c]);
                stats.inv_std.push_back(s[C + c]);
            }
            hb_reference::batchnorm_backward(pool_, dims(l.in), x.data(), gamma.data(), stats,
                                             g.data(), dx.data(), dgamma.data(), dbeta.data());
        }
        gradients_[size_t(l.weight)] = dgamma;
        gradients_[size_t(l.bias)] = dbeta;
    }

    const Plan& plan_;
    bool own_batchnorm_;
    ArenaPlan arena_plan_;
    std::vector<unsigned char> arena_;
    hb_reference::ThreadPool pool_;
    hb_reference::Gemm<float> gemm_;
    std::vector<Values> parameters_;  // every tensor in float32, by tensor index
    Values input_;
    const float* target_ = nullptr;
    double loss_ = 0;
    std::vector<Values> gradients_;  // by tensor index
};

struct Mode {
    const char* name;
    Storage storage;
    bool own_batchnorm, fused;
    friend std::ostream& operator<<(std::ostream& out, const Mode& m) { return out << m.name; }
};

class CudnnPlanExecution : public ::testing::TestWithParam<Mode> {};

// One step of the mode's plan (asked for the input's gradient or not) against the reference's.
harness::check::Comparison execute(const Mode& mode, bool input_gradient) {
    const hb_graph& graph = *check_problem().abi.get();
    std::set<int> fuse;
    if (mode.fused)
        for (int b : fusion_candidates(graph)) fuse.insert(b);
    const Plan plan(graph, fuse, mode.storage, input_gradient);
    const harness::check::Tolerance tolerance = harness::check::tolerance_for(
        mode.storage == Storage::bf16 ? hb::Math::bf16 : hb::Math::fp32);
    static const harness::check::StepCapture expected[2] = {
        reference_step({{"math", "fp64"}}, false), reference_step({{"math", "fp64"}}, true)};
    std::vector<harness::check::StepCapture> ensemble;
    for (int m = 0; m < harness::check::kFirstMembers; ++m)
        ensemble.push_back(
            reference_step(harness::check::ensemble_member_options(m, tolerance.significand_bits),
                           input_gradient));
    const harness::check::Comparison c = harness::check::compare(
        PlanExecutor(plan, mode.own_batchnorm).step(), expected[input_gradient ? 1 : 0], tolerance,
        harness::check::members_of(ensemble));
    std::printf("%s%s: worst %s\n", mode.name, input_gradient ? " with the input's gradient" : "",
                harness::testing::worst_quantity(c).c_str());
    return c;
}

TEST_P(CudnnPlanExecution, OneStepPassesTheCheckAgainstTheReference) {
    const harness::check::Comparison c = execute(GetParam(), false);
    EXPECT_TRUE(harness::testing::passes(c));
    EXPECT_TRUE(c.not_compared.empty());
}

// Asked for it, the plan also sends the graph's input its gradient (the stem convolution's
// backward data), which passes as `gradient input` with the rest.
TEST_P(CudnnPlanExecution, TheInputsGradientPassesTooWhenAskedFor) {
    const harness::check::Comparison c = execute(GetParam(), true);
    EXPECT_TRUE(harness::testing::passes(c));
    EXPECT_TRUE(c.not_compared.empty());
    const auto input = std::find_if(
        c.differences.begin(), c.differences.end(),
        [](const harness::check::Difference& d) { return d.quantity == "gradient input"; });
    ASSERT_NE(input, c.differences.end());
    EXPECT_GT(input->scale, 0);
    std::printf("%s: %s\n", GetParam().name, harness::testing::describe(*input).c_str());
}

INSTANTIATE_TEST_SUITE_P(
    Modes, CudnnPlanExecution,
    ::testing::Values(Mode{"fp32", Storage::f32, false, false},
                      Mode{"fp32_fused", Storage::f32, false, true},
                      Mode{"fp32_own_batchnorm", Storage::f32, true, false},
                      Mode{"fp32_own_batchnorm_fused", Storage::f32, true, true},
                      Mode{"bf16", Storage::bf16, true, false},
                      Mode{"bf16_fused", Storage::bf16, true, true}),
    [](const ::testing::TestParamInfo<Mode>& mode) { return std::string(mode.param.name); });

}  // namespace
