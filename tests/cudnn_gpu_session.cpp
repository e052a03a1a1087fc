// The helpers shared by the tests that drive the cuDNN plugin through its C ABI.
#include "cudnn_gpu_session.hpp"

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace cudnn_test {

namespace {

void tell(void* context, int32_t buffer) {
    static_cast<Told*>(context)->buffers.push_back(buffer);
}

}  // namespace

const hb_plugin_api& plugin_api() {
    static const hb_plugin_api& api = harness::testing::load_plugin(
        harness::testing::plugin_path("hb_cudnn.so", "HB_CUDNN_PLUGIN"));
    return api;
}

const harness::testing::CheckProblem& problem() {
    return harness::testing::check_problem();
}

void set_problem_batches(hb::Session& session) {
    const auto& b = problem().batches;
    session.set_batches(static_cast<int32_t>(b.inputs.size()),
                        harness::testing::pointers(b.inputs).data(),
                        harness::testing::pointers(b.targets).data());
}

hb_session_desc describe_session(const StepMode& s, const hb_optimizer& o,
                                 std::vector<hb_option>& options, const char* device) {
    options.clear();
    for (const auto& kv : s.options) options.push_back({kv.first.c_str(), kv.second.c_str()});
    return harness::testing::session_desc(problem().abi, o, options, device, s.placement);
}

void set_profiling(harness::testing::AbiSession& session, bool enabled) {
    if (plugin_api().set_profiling(session.get(), enabled ? 1 : 0) != HB_OK)
        throw std::runtime_error(std::string("set_profiling: ") +
                                 plugin_api().session_error(session.get()));
}

void check_call(harness::testing::AbiSession& session, const char* what, hb_status status) {
    if (status != HB_OK)
        throw std::runtime_error(std::string(what) + ": " +
                                 plugin_api().session_error(session.get()));
}

hb_step_result forward_backward(harness::testing::AbiSession& session, int32_t batch, Told* told) {
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

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() &&
           (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

}  // namespace cudnn_test
