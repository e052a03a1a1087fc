#include "run/plugin_library.hpp"

#include <boost/dll/shared_library.hpp>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <list>
#include <mutex>

namespace harness::run {

namespace {

// Every library ever loaded, never unloaded, not even at exit: the list is never destroyed. A
// library's own threads (an OpenMP pool still spinning after the last step) may run while the
// process exits, and would crash in code that an unload had unmapped.
boost::dll::shared_library& keep_loaded(boost::dll::shared_library library) {
    static std::mutex mutex;
    static auto* libraries = new std::list<boost::dll::shared_library>;
    std::lock_guard<std::mutex> lock(mutex);
    libraries->push_back(std::move(library));
    return libraries->back();
}

std::string version_string(uint32_t v) {
    return std::to_string(HB_API_MAJOR(v)) + "." + std::to_string(HB_API_MINOR(v));
}

// Version 1.0 of the table ends with `manifest`; a shorter table cannot be version 1.
constexpr size_t kMinimumTableSize = offsetof(hb_plugin_api, manifest) + sizeof(void*);

}  // namespace

const char* to_string(hb_status status) {
    switch (status) {
        case HB_OK:
            return "ok";
        case HB_ERROR:
            return "error";
        case HB_UNAVAILABLE:
            return "unavailable";
        case HB_OUT_OF_MEMORY:
            return "out of memory";
        case HB_UNSUPPORTED:
            return "unsupported";
    }
    return "unknown status";
}

PluginLibrary PluginLibrary::load(const std::filesystem::path& path) {
    boost::dll::shared_library* library = nullptr;
    try {
        library = &keep_loaded(boost::dll::shared_library(
            path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local));
    } catch (const std::exception& e) {
        throw PluginLoadError(path.string() + ": cannot load: " + e.what());
    }
    if (!library->has(HB_ENTRY_SYMBOL))
        throw PluginLoadError(path.string() + ": not a harness plugin: no '" HB_ENTRY_SYMBOL
                                              "' symbol");
    auto entry = library->get<const hb_plugin_api*()>(HB_ENTRY_SYMBOL);
    const hb_plugin_api* api = entry();
    if (api == nullptr)
        throw PluginLoadError(path.string() + ": " HB_ENTRY_SYMBOL " returned null");
    if (HB_API_MAJOR(api->api_version) != HB_API_VERSION_MAJOR)
        throw PluginLoadError(path.string() + ": plugin ABI version " +
                              version_string(api->api_version) +
                              " is incompatible with harness ABI " +
                              version_string(HB_API_VERSION) + " (major versions differ)");
    if (api->struct_size < kMinimumTableSize)
        throw PluginLoadError(path.string() + ": function table too small (" +
                              std::to_string(api->struct_size) + " bytes, ABI " +
                              version_string(api->api_version) + " needs at least " +
                              std::to_string(kMinimumTableSize) + ")");
    if (!api->last_error || !api->describe || !api->create_session || !api->destroy_session ||
        !api->session_error || !api->load_state || !api->set_batches || !api->step ||
        !api->read_state)
        throw PluginLoadError(path.string() + ": function table has a required entry missing");

    const hb_plugin_info* info = nullptr;
    hb_status status = api->describe(&info);
    if (status != HB_OK || info == nullptr)
        throw PluginLoadError(path.string() + ": describe failed (" + to_string(status) +
                              "): " + api->last_error());
    return PluginLibrary(path, api, info);
}

bool PluginLibrary::can_profile() const {
    constexpr size_t size = offsetof(hb_plugin_api, read_events) + sizeof(void*);
    return (info_->capabilities & HB_CAP_PROFILE) && api_->struct_size >= size &&
           api_->set_profiling && api_->read_events;
}

PluginSession::PluginSession(const PluginLibrary& library, const hb_session_desc& desc)
    : api_(library.api()), can_profile_(library.can_profile()), plugin_name_(library.info().name) {
    hb_status status = api_.create_session(&desc, &session_);
    if (status != HB_OK) {
        session_ = nullptr;
        throw PluginCallError(status, plugin_name_ + ": create_session: " + api_.last_error());
    }
}

PluginSession::~PluginSession() {
    if (session_) api_.destroy_session(session_);
}

void PluginSession::check(hb_status status, const char* call) {
    if (status != HB_OK)
        throw PluginCallError(status,
                              plugin_name_ + ": " + call + ": " + api_.session_error(session_));
}

void PluginSession::load_state(const float* const* tensors) {
    check(api_.load_state(session_, tensors), "load_state");
}

void PluginSession::load_optimizer_state(const float* const* square_averages) {
    if (!api_.load_optimizer_state)
        throw PluginCallError(HB_UNSUPPORTED, plugin_name_ + ": load_optimizer_state missing");
    check(api_.load_optimizer_state(session_, square_averages), "load_optimizer_state");
}

void PluginSession::set_batches(int32_t count, const float* const* inputs,
                                const float* const* targets) {
    check(api_.set_batches(session_, count, inputs, targets), "set_batches");
}

hb_step_result PluginSession::step(int32_t batch) {
    hb_step_result result{};
    result.struct_size = sizeof(result);
    result.forward_ms = result.backward_ms = result.optimizer_ms = -1;
    check(api_.step(session_, batch, &result), "step");
    return result;
}

void PluginSession::read_state(float* const* tensors) {
    check(api_.read_state(session_, tensors), "read_state");
}

void PluginSession::read_gradients(float* const* gradients) {
    if (!api_.read_gradients)
        throw PluginCallError(HB_UNSUPPORTED, plugin_name_ + ": read_gradients missing");
    check(api_.read_gradients(session_, gradients), "read_gradients");
}

uint64_t PluginSession::peak_memory() {
    uint64_t bytes = 0;
    if (!api_.peak_memory || api_.peak_memory(session_, &bytes) != HB_OK) return 0;
    return bytes;
}

std::string PluginSession::manifest() {
    const char* json = nullptr;
    if (!api_.manifest || api_.manifest(session_, &json) != HB_OK || json == nullptr) return "{}";
    return json;
}

void PluginSession::set_profiling(bool enabled) {
    if (!can_profile_) throw PluginCallError(HB_UNSUPPORTED, plugin_name_ + ": cannot profile");
    check(api_.set_profiling(session_, enabled ? 1 : 0), "set_profiling");
}

std::vector<hb_event> PluginSession::read_events() {
    if (!can_profile_) throw PluginCallError(HB_UNSUPPORTED, plugin_name_ + ": cannot profile");
    const hb_event* events = nullptr;
    int32_t count = 0;
    uint32_t size = 0;
    check(api_.read_events(session_, &events, &count, &size), "read_events");
    if (count > 0 && (!events || size < offsetof(hb_event, end_ms) + sizeof(double)))
        throw PluginCallError(
            HB_ERROR, plugin_name_ + ": read_events: events of " + std::to_string(size) + " bytes");
    std::vector<hb_event> out;
    for (int32_t i = 0; i < count; ++i) {
        hb_event e{};
        std::memcpy(&e, reinterpret_cast<const char*>(events) + size_t(i) * size,
                    std::min<size_t>(size, sizeof e));
        out.push_back(e);
    }
    return out;
}

}  // namespace harness::run
