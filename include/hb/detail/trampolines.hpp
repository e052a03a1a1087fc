// The machinery behind HB_PLUGIN (include "hb/plugin.hpp", not this): the C function table
// whose entries turn every exception into a status and a message, and the argument checks of
// Session's contract made once for every plugin (CallGuard). A plugin author need not read it.
#pragma once

#ifndef HB_PLUGIN_HPP_TYPES
#error "include hb/plugin.hpp, which includes this after the types it needs"
#endif

#include "hb/session_desc.hpp"

#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

namespace hb {
namespace detail {

// The argument checks of Session's contract, made once here for every plugin.
class CallGuard {
public:
    // A session without a graph (a plugin that needs none) has no tensors to check.
    // `input_gradient`: the session description asked for the input's gradient.
    explicit CallGuard(const hb_graph* graph, bool input_gradient = false)
        : input_gradient_(input_gradient) {
        for (int32_t i = 0; graph && i < graph->num_tensors; ++i) {
            const hb_tensor t = graph_tensor(*graph, i);
            names_.emplace_back(t.name ? t.name : "");
            trainable_.push_back(t.trainable != 0);
        }
    }

    // One buffer per tensor (per trainable tensor when `trainable_only`), in graph order.
    void tensors(const char* call, const void* const* buffers, bool trainable_only) const {
        if (!buffers) throw Error(std::string(call) + ": no buffers");
        size_t k = 0;
        for (size_t i = 0; i < names_.size(); ++i) {
            if (trainable_only && !trainable_[i]) continue;
            if (!buffers[k++])
                throw Error(std::string(call) + ": no buffer for tensor '" + names_[i] + "'");
        }
    }

    void batches(int32_t count, const float* const* inputs, const float* const* targets) const {
        if (count < 1)
            throw Error("set_batches: expected at least one batch, got " + std::to_string(count));
        if (!inputs || !targets) throw Error("set_batches: no inputs or targets");
        for (int32_t b = 0; b < count; ++b)
            if (!inputs[b] || !targets[b])
                throw Error("set_batches: batch " + std::to_string(b) + " has no input or target");
    }

    // The batch a step trains on, in [0, count).
    int32_t batch_index(int32_t step) const {
        if (!state_loaded_) throw Error("step: no state; call load_state first");
        if (batches_ == 0) throw Error("step: no batches; call set_batches first");
        return ((step % batches_) + batches_) % batches_;
    }

    // Whether a step (or a forward_backward) has run, so that there are gradients to read.
    void stepped() { stepped_ = true; }
    void check_stepped(const char* call) const {
        if (!stepped_) throw Error(std::string(call) + ": no step has run yet");
    }

    // read_input_gradient: only in a session asked for it, after a step.
    void check_input_gradient() const {
        if (!input_gradient_)
            throw Error(
                "read_input_gradient: the session was not asked for the input's gradient "
                "(hb_session_desc.input_gradient)",
                HB_UNSUPPORTED);
        check_stepped("read_input_gradient");
    }

    void state_loaded() { state_loaded_ = true; }
    void batches_set(int32_t count) { batches_ = count; }

    // Whether an update is owed: set by forward_backward, cleared by apply_update and step.
    void update_owed(bool owed) { update_owed_ = owed; }
    void check_update_owed() const {
        if (!update_owed_) throw Error("apply_update: no forward_backward since the last update");
    }

private:
    bool update_owed_ = false;
    bool stepped_ = false;
    bool input_gradient_;
    std::vector<std::string> names_;
    std::vector<bool> trainable_;
    bool state_loaded_ = false;
    int32_t batches_ = 0;
};

struct SessionBox {
    std::unique_ptr<Session> impl;
    std::unique_ptr<CallGuard> guard;
    std::string error;
    std::string manifest;
    std::vector<hb_gradient_buffer> buffers;
    hb_gradient_buffers gradient_buffers{};
};

inline void fill(hb_step_result* r, const StepResult& x) {
    r->struct_size = sizeof(hb_step_result);
    r->loss = x.loss;
    r->forward_ms = x.forward_ms;
    r->backward_ms = x.backward_ms;
    r->optimizer_ms = x.optimizer_ms;
}

inline std::string& plugin_error() {
    thread_local std::string message;
    return message;
}

template <class F>
hb_status guarded(std::string& error, F&& f) noexcept {
    try {
        f();
        return HB_OK;
    } catch (const Error& e) {
        error = e.what();
        return e.status();
    } catch (const std::bad_alloc&) {
        error = "out of memory";
        return HB_OUT_OF_MEMORY;
    } catch (const std::exception& e) {
        error = e.what();
        return HB_ERROR;
    } catch (...) {
        error = "unknown exception";
        return HB_ERROR;
    }
}

inline SessionBox* box(hb_session* s) {
    return reinterpret_cast<SessionBox*>(s);
}

// Keeps the C view of a PluginInfo alive for the life of the process.
struct InfoStore {
    PluginInfo info;
    std::vector<hb_library_version> libraries;
    std::vector<hb_device_info> devices;
    std::vector<std::vector<const char*>> choices;  // of each option
    std::vector<hb_option_spec> options;
    hb_plugin_info c{};

    void publish() {
        for (const auto& l : info.libraries)
            libraries.push_back({l.first.c_str(), l.second.c_str()});
        for (const auto& d : info.devices)
            devices.push_back({d.name.c_str(), d.description.c_str(), d.available ? 1 : 0,
                               d.available ? nullptr : d.unavailable_reason.c_str()});
        c.struct_size = sizeof(hb_plugin_info);
        c.name = info.name.c_str();
        c.version = info.version.c_str();
        c.description = info.description.c_str();
        c.capabilities = info.capabilities;
        c.num_libraries = static_cast<int32_t>(libraries.size());
        c.libraries = libraries.data();
        c.num_devices = static_cast<int32_t>(devices.size());
        c.devices = devices.data();
        for (const auto& o : info.options) {
            choices.emplace_back();
            for (const auto& choice : o.choices) choices.back().push_back(choice.c_str());
        }
        for (size_t i = 0; i < info.options.size(); ++i) {
            const OptionSpec& o = info.options[i];
            options.push_back({o.key.c_str(), o.type, o.min, o.max,
                               static_cast<int32_t>(choices[i].size()), choices[i].data(),
                               o.description.c_str(),
                               o.default_value.empty() ? nullptr : o.default_value.c_str(),
                               o.effect, o.checked_on.empty() ? nullptr : o.checked_on.c_str()});
        }
        const bool declared = !info.options.empty() || info.takes_no_options;
        c.option_size = declared ? sizeof(hb_option_spec) : 0;
        c.num_options = static_cast<int32_t>(options.size());
        c.options = options.data();
    }
};

template <class P>
struct Trampolines {
    static P& plugin() {
        static P instance;
        return instance;
    }

    static const char* last_error() noexcept { return plugin_error().c_str(); }

    // The plugin's description, made once and kept for the life of the process.
    static const InfoStore& info_store() {
        static InfoStore* store = [] {
            auto* s = new InfoStore{};
            s->info = plugin().describe();
            s->publish();
            return s;
        }();
        return *store;
    }

    static hb_status describe(const hb_plugin_info** out) noexcept {
        return guarded(plugin_error(), [&] { *out = &info_store().c; });
    }

    // The description checked here for every plugin, and the placement against its capability.
    static hb_status create_session(const hb_session_desc* desc, hb_session** out) noexcept {
        *out = nullptr;
        return guarded(plugin_error(), [&] {
            if (!desc) throw Error("create_session: no session description");
            check_session_desc(*desc);
            if (desc->placement == HB_PLACEMENT_HOST &&
                !(info_store().info.capabilities & HB_CAP_HOST_PLACEMENT))
                throw Error("placement host: this plugin does not announce HB_CAP_HOST_PLACEMENT",
                            HB_UNSUPPORTED);
            auto b = std::make_unique<SessionBox>();
            b->impl = plugin().create_session(*desc);
            b->guard = std::make_unique<CallGuard>(desc->graph, wants_input_gradient(*desc));
            *out = reinterpret_cast<hb_session*>(b.release());
        });
    }

    static void destroy_session(hb_session* s) noexcept {
        try {
            delete box(s);
        } catch (...) {
        }
    }

    static const char* session_error(const hb_session* s) noexcept {
        return reinterpret_cast<const SessionBox*>(s)->error.c_str();
    }

    static hb_status load_state(hb_session* s, const float* const* t) noexcept {
        return guarded(box(s)->error, [&] {
            box(s)->guard->tensors("load_state", reinterpret_cast<const void* const*>(t), false);
            box(s)->impl->load_state(t);
            box(s)->guard->state_loaded();
        });
    }
    static hb_status load_optimizer_state(hb_session* s, const float* const* t) noexcept {
        return guarded(box(s)->error, [&] {
            box(s)->guard->tensors("load_optimizer_state", reinterpret_cast<const void* const*>(t),
                                   true);
            box(s)->impl->load_optimizer_state(t);
        });
    }
    static hb_status set_batches(hb_session* s, int32_t n, const float* const* in,
                                 const float* const* tg) noexcept {
        return guarded(box(s)->error, [&] {
            box(s)->guard->batches(n, in, tg);
            box(s)->guard->batches_set(0);  // until the session has taken them
            box(s)->impl->set_batches(n, in, tg);
            box(s)->guard->batches_set(n);
        });
    }
    static hb_status step(hb_session* s, int32_t batch, hb_step_result* r) noexcept {
        return guarded(box(s)->error, [&] {
            box(s)->guard->update_owed(false);
            fill(r, box(s)->impl->step(box(s)->guard->batch_index(batch)));
            box(s)->guard->stepped();
        });
    }
    static hb_status read_state(hb_session* s, float* const* t) noexcept {
        return guarded(box(s)->error, [&] {
            box(s)->guard->tensors("read_state", reinterpret_cast<const void* const*>(t), false);
            box(s)->impl->read_state(t);
        });
    }
    static hb_status read_gradients(hb_session* s, float* const* g) noexcept {
        return guarded(box(s)->error, [&] { box(s)->impl->read_gradients(g); });
    }
    static hb_status peak_memory(hb_session* s, uint64_t* bytes) noexcept {
        return guarded(box(s)->error, [&] { *bytes = box(s)->impl->peak_memory_bytes(); });
    }
    static hb_status manifest(hb_session* s, const char** json) noexcept {
        return guarded(box(s)->error, [&] {
            box(s)->manifest = box(s)->impl->manifest_json();
            *json = box(s)->manifest.c_str();
        });
    }

    static hb_status set_profiling(hb_session* s, int32_t enabled) noexcept {
        return guarded(box(s)->error, [&] { box(s)->impl->set_profiling(enabled != 0); });
    }
    static hb_status read_events(hb_session* s, const hb_event** events, int32_t* count,
                                 uint32_t* event_size) noexcept {
        return guarded(box(s)->error, [&] {
            const std::vector<hb_event>& e = box(s)->impl->events();
            *events = e.data();
            *count = static_cast<int32_t>(e.size());
            *event_size = sizeof(hb_event);
        });
    }

    static hb_status gradient_buffers(hb_session* s, const hb_gradient_buffers** out) noexcept {
        return guarded(box(s)->error, [&] {
            SessionBox& b = *box(s);
            if (b.gradient_buffers.struct_size == 0) {
                b.buffers = b.impl->gradient_buffers();
                b.gradient_buffers.struct_size = sizeof(hb_gradient_buffers);
                b.gradient_buffers.buffer_size = sizeof(hb_gradient_buffer);
                b.gradient_buffers.count = static_cast<int32_t>(b.buffers.size());
                b.gradient_buffers.buffers = b.buffers.data();
                b.gradient_buffers.stream = b.impl->gradient_stream();
            }
            *out = &b.gradient_buffers;
        });
    }
    static hb_status forward_backward(hb_session* s, int32_t batch, hb_gradient_ready ready,
                                      void* context, hb_step_result* r) noexcept {
        return guarded(box(s)->error, [&] {
            const int32_t index = box(s)->guard->batch_index(batch);
            box(s)->guard->update_owed(false);
            fill(r, box(s)->impl->forward_backward(index, GradientReady{ready, context}));
            box(s)->guard->update_owed(true);
            box(s)->guard->stepped();
        });
    }
    static hb_status apply_update(hb_session* s, hb_step_result* r) noexcept {
        return guarded(box(s)->error, [&] {
            box(s)->guard->check_update_owed();
            box(s)->guard->update_owed(false);
            fill(r, box(s)->impl->apply_update());
        });
    }

    static hb_status read_input_gradient(hb_session* s, float* gradient) noexcept {
        return guarded(box(s)->error, [&] {
            if (!gradient) throw Error("read_input_gradient: no buffer");
            box(s)->guard->check_input_gradient();
            box(s)->impl->read_input_gradient(gradient);
        });
    }

    static const hb_plugin_api* table() noexcept {
        static const hb_plugin_api api = {
            /* .api_version          = */ HB_API_VERSION,
            /* .struct_size          = */ sizeof(hb_plugin_api),
            /* .last_error           = */ last_error,
            /* .describe             = */ describe,
            /* .create_session       = */ create_session,
            /* .destroy_session      = */ destroy_session,
            /* .session_error        = */ session_error,
            /* .load_state           = */ load_state,
            /* .load_optimizer_state = */ load_optimizer_state,
            /* .set_batches          = */ set_batches,
            /* .step                 = */ step,
            /* .read_state           = */ read_state,
            /* .read_gradients       = */ read_gradients,
            /* .peak_memory          = */ peak_memory,
            /* .manifest             = */ manifest,
            /* .set_profiling        = */ set_profiling,
            /* .read_events          = */ read_events,
            /* .gradient_buffers     = */ gradient_buffers,
            /* .forward_backward     = */ forward_backward,
            /* .apply_update         = */ apply_update,
            /* .read_input_gradient  = */ read_input_gradient,
        };
        return &api;
    }
};

}  // namespace detail
}  // namespace hb
