// Test fixtures: plugins that misbehave in one precise way each (selected by a FAKE_* macro), so
// the loader and the runner can be shown to report them without losing the other backends.
// `good` trains nothing: its "loss" only decreases so that a run has something to record;
// `other_loss` does the same from another first loss, as a backend that computed another step;
// `chatty` is `good` writing log lines to stderr; `pid` is `good` naming its process among its
// libraries, so that a test can tell the workers apart.
#include "hb/plugin.hpp"
#include "hb/profile.hpp"

#if defined(FAKE_abi_2_3)
static_assert(HB_API_VERSION_MAJOR == 2 && HB_API_VERSION_MINOR == 3,
              "built against the ABI 2.3 SDK (tests/abi/2.3)");
#endif

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <thread>

#include <unistd.h>

namespace {

class FakeSession : public hb::Session {
public:
#if defined(FAKE_chatty)
    // A library that logs as it starts, as TensorFlow does.
    FakeSession() {
        for (int i = 1; i <= 15; ++i) std::fprintf(stderr, "fake: log line %d\n", i);
    }
#endif
    void load_state(const float* const*) override {}
    void set_batches(int32_t, const float* const*, const float* const*) override {}
    hb::StepResult step(int32_t) override {
#if defined(FAKE_throws)
        throw std::runtime_error("deliberate failure in step");
#elif defined(FAKE_crashes)
        std::fputs("fake: last words before the crash\n", stderr);
        std::raise(SIGSEGV);
#elif defined(FAKE_hangs)
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
#elif defined(FAKE_slow)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
#endif
        hb::StepResult r;
        log_.begin_step();
        if (log_.enabled()) {
            // Two host operations on layer 0 and an update, and one on a second track.
            { hb::EventLog::Scope forward(log_, "forward op", 0, HB_PHASE_FORWARD); }
            { hb::EventLog::Scope backward(log_, "backward op", 0, HB_PHASE_BACKWARD); }
            { hb::EventLog::Scope update(log_, "update op", -1, HB_PHASE_UPDATE); }
            log_.add("copy", -1, HB_PHASE_TRANSFER, 0, log_.now_ms(), "stream 0");
        }
#if defined(FAKE_nan)
        r.loss = std::numeric_limits<double>::quiet_NaN();
#elif defined(FAKE_other_loss)
        r.loss = 2.0 / (1.0 + steps_++);  // starts from another loss than `good`
#else
        r.loss = 1.0 / (1.0 + steps_++);
#endif
        return r;
    }
    void read_state(float* const*) override {}
    std::string manifest_json() override {
#if defined(FAKE_no_math)
        return R"({"threads": 1})";
#elif defined(FAKE_odd_math)
        return R"({"math": "fp23", "threads": 1})";
#else
        return R"({"math": "fp32", "threads": 1})";
#endif
    }
    void set_profiling(bool enabled) override {
        log_.set_enabled(enabled);
    }
    const std::vector<hb_event>& events() override {
        return log_.events();
    }

private:
    int steps_ = 0;
    hb::EventLog log_;
};

class FakePlugin : public hb::Plugin {
public:
    FakePlugin() {
#if defined(FAKE_crash_on_load)
        std::abort();
#endif
    }
    hb::PluginInfo describe() override {
        hb::PluginInfo info;
        info.name = "fake";
        info.version = "0.0.1";
        info.description = "test fixture";
        info.libraries = {{"nothing", "1.0"}};
#if defined(FAKE_pid)
        info.libraries.emplace_back("process", std::to_string(getpid()));
#endif
#if !defined(FAKE_unprofiled)
        info.capabilities = HB_CAP_PROFILE;
#endif
#if defined(FAKE_unavailable)
        info.devices = {{ "cpu", "a processor", false, "deliberately unavailable" }};
#elif defined(FAKE_one_gpu)
        info.devices = {{"cpu", "a processor", true, ""}, { "cuda:0", "a pretend GPU", true, "" }};
#else
        info.devices = {{ "cpu", "a processor", true, "" }};
#endif
        return info;
    }
    std::unique_ptr<hb::Session> create_session(const hb_session_desc&) override {
        return std::make_unique<FakeSession>();
    }
};

}  // namespace

#if defined(FAKE_wrong_abi)
extern "C" HB_EXPORT const hb_plugin_api* hb_plugin_entry(void) {
    static hb_plugin_api api = *::hb::detail::Trampolines<FakePlugin>::table();
    api.api_version = (99u << 16) | 3u;
    return &api;
}
#else
HB_PLUGIN(FakePlugin)
#endif
