// The host side of the plugin ABI: loading a plugin library, checking its table, and RAII wrappers
// that turn every status into an exception carrying the plugin's own message.
#pragma once

#include "hb/options.hpp"
#include "hb/plugin.h"

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace harness::plugin_host {

// The library could not be loaded or does not speak our ABI.
class PluginLoadError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A plugin call returned a status other than HB_OK.
class PluginCallError : public std::runtime_error {
public:
    PluginCallError(hb_status status, const std::string& message)
        : std::runtime_error(message), status_(status) {}
    hb_status status() const { return status_; }

private:
    hb_status status_;
};

const char* to_string(hb_status status);

class PluginLibrary {
public:
    // Loads the library (it then stays loaded for the life of the process: plugin threads may
    // outlive any session) and validates its function table. Throws PluginLoadError.
    static PluginLibrary load(const std::filesystem::path& path);

    const std::filesystem::path& path() const { return path_; }
    const hb_plugin_api& api() const { return *api_; }
    const hb_plugin_info& info() const { return *info_; }
    // HB_CAP_GRADIENTS: announced, and read_gradients in the table.
    bool can_read_gradients() const;
    // ABI 2.1's profiling: announced, and both functions in the table.
    bool can_profile() const;
    // ABI 2.2's split step: announced, and its three functions in the table.
    bool can_split_step() const;
    // ABI 2.3's input gradient: announced, and read_input_gradient in the table.
    bool can_read_input_gradient() const;
    // ABI 2.4's declared options; none when the plugin does not declare them.
    std::optional<std::vector<hb::OptionSpec>> declared_options() const;

private:
    PluginLibrary(std::filesystem::path path, const hb_plugin_api* api, const hb_plugin_info* info)
        : path_(std::move(path)), api_(api), info_(info) {}
    std::filesystem::path path_;
    const hb_plugin_api* api_;
    const hb_plugin_info* info_;
};

class PluginSession {
public:
    PluginSession(const PluginLibrary& library, const hb_session_desc& desc);
    ~PluginSession();
    PluginSession(const PluginSession&) = delete;
    PluginSession& operator=(const PluginSession&) = delete;

    void load_state(const float* const* tensors);
    void load_optimizer_state(const float* const* square_averages);
    void set_batches(int32_t count, const float* const* inputs, const float* const* targets);
    // The phase times are kept only from a plugin that announces HB_CAP_PHASE_TIMES (else -1).
    hb_step_result step(int32_t batch);
    void read_state(float* const* tensors);
    void read_gradients(float* const* gradients);
    uint64_t peak_memory();  // 0 when the plugin does not announce HB_CAP_PEAK_MEMORY
    std::string manifest();  // "{}" when the plugin does not report one
    // Only where the library can_profile().
    void set_profiling(bool enabled);
    std::vector<hb_event> read_events();  // the last step's; names valid until the next call

    // Only where the library can_split_step(). The buffers, checked against the graph: one per
    // trainable tensor, each once.
    std::vector<hb_gradient_buffer> gradient_buffers(const hb_graph& graph, void** stream);
    // `ready` hears each buffer's index as its gradient is final; an exception it throws ends the
    // step after the plugin returns, and is thrown again from here.
    hb_step_result forward_backward(int32_t batch, const std::function<void(int32_t)>& ready);
    hb_step_result apply_update();

    // The last step's input gradient, N x 3 x S x S, into `gradient`: only in a session whose
    // description asked for it, of a library that can_read_input_gradient().
    void read_input_gradient(float* gradient);

private:
    void check(hb_status status, const char* call);
    void require_split_step() const;
    hb_step_result announced(hb_step_result result) const;  // without unannounced phase times
    const hb_plugin_api& api_;
    bool can_profile_;
    bool can_split_step_;
    bool can_read_input_gradient_;
    bool times_phases_;
    bool reports_peak_memory_;
    std::string plugin_name_;
    hb_session* session_ = nullptr;
};

}  // namespace harness::plugin_host
