// The cuDNN plugin loaded with dlopen as the harness loads it, the check problem, and the session
// helpers shared by the tests that drive the plugin through its C ABI (cudnn_gpu_test).
#pragma once

#include "hb/manifest.hpp"

#include "backend_comparison.hpp"
#include "check_problem.hpp"
#include "hb/plugin.hpp"
#include "loaded_plugin.hpp"

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace cudnn_test {

const hb_plugin_api& plugin_api();

const harness::testing::CheckProblem& problem();

// The problem's batches, handed to `session`.
void set_problem_batches(hb::Session& session);

struct StepMode {
    std::string name;
    std::vector<std::pair<std::string, std::string>> options;
    hb_placement placement = HB_PLACEMENT_DEVICE;
    hb_rmsprop_variant variant = HB_RMSPROP_TORCH;
    hb::Math math() const {
        for (const auto& kv : options)
            if (kv.first == "math") return hb::math_from_string(kv.second).value_or(hb::Math::fp32);
        return hb::Math::fp32;
    }
    friend std::ostream& operator<<(std::ostream& out, const StepMode& m) { return out << m.name; }
};

hb_session_desc describe_session(const StepMode& s, const hb_optimizer& o,
                                 std::vector<hb_option>& options, const char* device);

void set_profiling(harness::testing::AbiSession& session, bool enabled);

void check_call(harness::testing::AbiSession& session, const char* what, hb_status status);

struct Told {
    std::vector<int32_t> buffers;
};

hb_step_result forward_backward(harness::testing::AbiSession& session, int32_t batch,
                                Told* told = nullptr);

hb_step_result apply_update(harness::testing::AbiSession& session);

bool same_bits(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace cudnn_test

#define SKIP_WITHOUT_CUDA() HB_SKIP_WITHOUT_DEVICE(cudnn_test::plugin_api(), "cuda:0")
