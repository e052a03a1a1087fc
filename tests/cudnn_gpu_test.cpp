// The cuDNN backend through its C ABI, loaded with dlopen as the harness loads it: its description
// and, without a GPU, a clean HB_UNAVAILABLE; with one, its training step against the reference
// backend on the check network (losses, every gradient after the first step, parameters and
// running statistics after the second), judged as `harness check` judges it, in each layout,
// fusion, graph, placement and math mode.
#include "check/comparison.hpp"
#include "check_problem.hpp"
#include "data/perturbation.hpp"
#include "loaded_plugin.hpp"
#include "session.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using harness::check::compare;
using harness::check::Comparison;
using harness::check::StepCapture;
using harness::check::Tolerance;
using harness::check::tolerance_for;

const hb_plugin_api& plugin_api() {
    static const hb_plugin_api& api = harness::testing::load_plugin(
        harness::testing::plugin_path("hb_cudnn.so", "HB_CUDNN_PLUGIN"));
    return api;
}

const hb_plugin_info& plugin_info() {
    return harness::testing::describe(plugin_api());
}

#define SKIP_WITHOUT_CUDA() HB_SKIP_WITHOUT_DEVICE(plugin_api(), "cuda:0")

hb_optimizer rmsprop(hb_rmsprop_variant variant) {
    hb_optimizer o{};
    o.variant = variant;
    o.learning_rate = 2.5e-4f;
    if (variant == HB_RMSPROP_TORCH) {
        o.alpha = 0.99f;
        o.eps = 1e-8f;
    } else {
        o.alpha = 0.9f;
        o.eps = 1e-10f;
        o.initial_square_average = 1;
    }
    return o;
}

const harness::testing::CheckProblem& problem() {
    return harness::testing::check_problem();
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

template <class T>
std::vector<const T*> pointers(const std::vector<std::vector<T>>& buffers) {
    std::vector<const T*> out;
    for (const auto& b : buffers) out.push_back(b.data());
    return out;
}

// Buffers by tensor index for a capture's map (trainable tensors only, or all).
std::vector<float*> outputs(std::map<std::string, std::vector<float>>& capture,
                            bool trainable_only) {
    std::vector<float*> out;
    for (const auto& t : problem().graph.tensors) {
        const bool wanted = !trainable_only || t.trainable();
        if (wanted) capture[t.name].resize(static_cast<size_t>(t.elements()));
        out.push_back(wanted ? capture[t.name].data() : nullptr);
    }
    return out;
}

hb_session_desc describe_session(const StepMode& s, const hb_optimizer& o,
                                 std::vector<hb_option>& options, const char* device) {
    options.clear();
    for (const auto& kv : s.options) options.push_back({kv.first.c_str(), kv.second.c_str()});
    hb_session_desc desc{};
    desc.struct_size = sizeof(desc);
    desc.graph = problem().abi.get();
    desc.optimizer = &o;
    desc.device = device;
    desc.placement = s.placement;
    desc.num_options = static_cast<int32_t>(options.size());
    desc.options = options.data();
    return desc;
}

// Two reference steps, as `harness check` captures them; from weights one ulp of a
// `perturb_bits`-bit format away when that is positive (the rounding-noise yardstick).
StepCapture reference_run(hb_rmsprop_variant variant, int perturb_bits = 0) {
    const hb_optimizer o = rmsprop(variant);
    std::vector<hb_option> options;
    StepMode plain;
    plain.variant = variant;
    plain.options = {{"threads", "4"}};
    reference::ReferenceSession session(describe_session(plain, o, options, "cpu"));
    const auto& p = problem();
    std::vector<harness::data::HostTensor> weights = p.state;
    if (perturb_bits > 0)
        harness::data::perturb_by_one_ulp(p.graph, p.config.seed, weights, perturb_bits);
    session.load_state(pointers(weights).data());
    session.set_batches(int32_t(p.batches.inputs.size()), pointers(p.batches.inputs).data(),
                        pointers(p.batches.targets).data());
    StepCapture run;
    for (int step = 0; step < 2; ++step) {
        run.losses.push_back(session.step(step % int32_t(p.batches.inputs.size())).loss);
        if (step == 0) session.read_gradients(outputs(run.gradients, true).data());
    }
    session.read_state(outputs(run.state, false).data());
    return run;
}

StepCapture cudnn_run(const StepMode& s) {
    const hb_plugin_api& api = plugin_api();
    const hb_optimizer o = rmsprop(s.variant);
    std::vector<hb_option> options;
    const hb_session_desc desc = describe_session(s, o, options, "cuda:0");
    hb_session* session = nullptr;
    if (api.create_session(&desc, &session) != HB_OK)
        throw std::runtime_error(std::string("create_session: ") + api.last_error());
    auto check = [&](hb_status status, const char* what) {
        if (status != HB_OK) {
            const std::string message = std::string(what) + ": " + api.session_error(session);
            api.destroy_session(session);
            throw std::runtime_error(message);
        }
    };
    const auto& p = problem();
    check(api.load_state(session, pointers(p.state).data()), "load_state");
    check(api.set_batches(session, int32_t(p.batches.inputs.size()),
                          pointers(p.batches.inputs).data(), pointers(p.batches.targets).data()),
          "set_batches");
    StepCapture run;
    for (int step = 0; step < 2; ++step) {
        hb_step_result r{};
        check(api.step(session, step, &r), "step");
        EXPECT_GT(r.forward_ms, 0);
        EXPECT_GT(r.backward_ms, 0);
        EXPECT_GT(r.optimizer_ms, 0);
        run.losses.push_back(r.loss);
        if (step == 0)
            check(api.read_gradients(session, outputs(run.gradients, true).data()),
                  "read_gradients");
    }
    check(api.read_state(session, outputs(run.state, false).data()), "read_state");
    uint64_t peak = 0;
    check(api.peak_memory(session, &peak), "peak_memory");
    EXPECT_GT(peak, 0u);
    const char* manifest = nullptr;
    check(api.manifest(session, &manifest), "manifest");
    EXPECT_NE(std::string(manifest).find("\"convolutions\""), std::string::npos);
    EXPECT_NE(std::string(manifest).find("\"math\": \"" + s.math() + "\""), std::string::npos)
        << manifest;
    // bf16 normalises with the backend's own kernels; otherwise cuDNN's Ex calls, unless the
    // mode asks for the legacy ones.
    const bool legacy = std::find(s.options.begin(), s.options.end(),
                                  std::make_pair(std::string("batchnorm"),
                                                 std::string("legacy"))) != s.options.end();
    if (s.math() != "bf16") {
        EXPECT_EQ(std::string(manifest).find("\"batchnorm_ex_layers\": 0,") != std::string::npos,
                  legacy)
            << manifest;
    }
    api.destroy_session(session);
    return run;
}

class CudnnStep : public ::testing::TestWithParam<StepMode> {};

// What `harness check` decides, in process: the mode's tolerance, or ten times the reference's
// own rounding noise at the mode's precision.
TEST_P(CudnnStep, PassesTheCheckAgainstTheReference) {
    SKIP_WITHOUT_CUDA();
    const StepMode& s = GetParam();
    const Tolerance tolerance = tolerance_for(s.math());
    const StepCapture expected = reference_run(s.variant);
    const StepCapture noise = reference_run(s.variant, tolerance.significand_bits);
    const Comparison c = compare(cudnn_run(s), expected, tolerance, &noise);
    ASSERT_TRUE(c.problem.empty()) << c.problem;
    for (const auto& d : c.differences)
        EXPECT_TRUE(d.within()) << d.quantity << ": " << d.relative << " > " << d.tolerance
                                << " (noise " << d.noise << ")";
}

INSTANTIATE_TEST_SUITE_P(
    Modes, CudnnStep,
    ::testing::Values(StepMode{"fp32_nchw", {}}, StepMode{"fp32_nhwc", {{"layout", "nhwc"}}},
                      StepMode{"fused_nhwc", {{"layout", "nhwc"}, {"fused_bn_relu", "true"}}},
                      StepMode{"graphs", {{"cuda_graphs", "true"}}},
                      StepMode{"graphs_host", {{"cuda_graphs", "true"}}, HB_PLACEMENT_HOST},
                      StepMode{"host_nhwc", {{"layout", "nhwc"}}, HB_PLACEMENT_HOST},
                      StepMode{"tensorflow", {}, HB_PLACEMENT_DEVICE, HB_RMSPROP_TENSORFLOW},
                      // cuDNN's legacy calls: the fallback where it declines the Ex batch norm.
                      StepMode{"legacy_calls",
                               {{"convolutions", "legacy"}, {"batchnorm", "legacy"}}},
                      StepMode{"legacy_calls_nhwc",
                               {{"convolutions", "legacy"},
                                {"batchnorm", "legacy"},
                                {"layout", "nhwc"},
                                {"fused_bn_relu", "true"}}},
                      StepMode{"tf32", {{"math", "tf32"}}}, StepMode{"bf16", {{"math", "bf16"}}},
                      StepMode{"bf16_nhwc_fused_graphs",
                               {{"math", "bf16"},
                                {"layout", "nhwc"},
                                {"fused_bn_relu", "true"},
                                {"cuda_graphs", "true"}},
                               HB_PLACEMENT_HOST}),
    [](const ::testing::TestParamInfo<StepMode>& mode) { return mode.param.name; });

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
