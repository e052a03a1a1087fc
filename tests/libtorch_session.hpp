// What the LibTorch tests share: the plugin loaded through its C ABI, the problems and sessions
// they run on it and on the reference backend, and the comparisons of what those runs read back.
#pragma once

#include "backend_comparison.hpp"
#include "check/comparison.hpp"
#include "data/initial_state.hpp"
#include "hb/plugin.hpp"
#include "loaded_plugin.hpp"
#include "model/graph.hpp"
#include "model/hourglass.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace libtorch_test {

using harness::model::AbiGraph;
using harness::model::Graph;
using harness::model::HourglassSpec;
using harness::testing::AbiSession;
using harness::testing::rmsprop;
using harness::testing::Tensors;

const hb_plugin_api& plugin_api();
const hb_plugin_info& plugin_info();

#define SKIP_WITHOUT_CUDA() HB_SKIP_WITHOUT_DEVICE(::libtorch_test::plugin_api(), "cuda:0")

struct Problem {
    explicit Problem(const HourglassSpec& spec);
    Graph graph;
    AbiGraph abi;
    Tensors state;
    harness::data::Batches batches;
};

const Problem& small_problem();
const Problem& tiny_problem();

// Square averages for every trainable tensor, large enough against g^2 that an update is about
// lr g / sqrt(v), a smooth function of the gradient, rather than the first step's lr sign(g) 10.
Tensors smooth_square_averages(const Problem& problem);

struct SessionSetup {
    const Problem* problem = &small_problem();
    hb_optimizer optimizer = rmsprop(HB_RMSPROP_TORCH);
    std::string device = "cpu";
    hb_placement placement = HB_PLACEMENT_DEVICE;
    std::vector<std::pair<std::string, std::string>> options;
    Tensors square_averages;  // loaded when not empty
};

// Everything a run produced: per step its loss, the gradients and the state after it.
struct TrainingRun : harness::testing::Trace {
    uint64_t peak_memory = 0;  // the plugin's runs only
};

// The options of a session description, made before the session (a base constructed first).
struct DescribedOptions {
    std::vector<hb_option> options;
};

// A session of the plugin, through the C ABI only.
class PluginSession : private DescribedOptions, public AbiSession {
public:
    explicit PluginSession(const SessionSetup& setup);
};

TrainingRun run_plugin(const SessionSetup& setup, int steps);

// The reference backend's steps on the CPU.
TrainingRun run_reference(const SessionSetup& setup, int steps);

// The oracle `harness check` measures against: the reference session in float64.
TrainingRun run_reference_fp64(const SessionSetup& setup, int steps);

// One thread: the tests share the machine, and LibTorch's OpenMP threads spin at barriers, which
// makes an oversubscribed run many times slower without changing what it checks.
SessionSetup cpu_setup(hb_optimizer optimizer, bool channels_last);

SessionSetup cuda_setup(std::vector<std::pair<std::string, std::string>> options);

// Both runs up to step `step`, as `harness check` compares them with `tolerance`: the losses and
// the gradients of step `gradient_step`; every tensor after step `step`, each element of it, a
// bias against at least the smallest of the largest weights of the layers with a bias.
::testing::AssertionResult steps_agree(const Graph& graph, const TrainingRun& torch,
                                       const TrainingRun& reference, int step, int gradient_step,
                                       harness::check::Tolerance tolerance);

// Two float64 runs of `steps` steps agree to `tolerance` in every loss (relative), and in every
// gradient and tensor after each step beyond the read-back's rounding (DoubleAgreement in
// libtorch_session.cpp).
::testing::AssertionResult agree_in_double(const Graph& graph, const TrainingRun& a,
                                           const TrainingRun& b, double tolerance);

// The plugin's parameters after its steps against the reference's RMSProp fed with the plugin's
// own gradients, each tensor to 1e-5 of its largest element.
void expect_optimizer_follows_the_reference(const SessionSetup& setup, const TrainingRun& run,
                                            double tolerance);

// The losses of two runs of the plugin, to `tolerance` relative to the second's.
::testing::AssertionResult losses_agree(const TrainingRun& a, const TrainingRun& b,
                                        double tolerance);

// A float32 run of the plugin against the reference's, to the tolerances that rounding leaves on
// this model (libtorch_session.cpp says which and why).
void expect_fp32_agreement(const SessionSetup& setup, const TrainingRun& torch,
                           const TrainingRun& reference);

}  // namespace libtorch_test
