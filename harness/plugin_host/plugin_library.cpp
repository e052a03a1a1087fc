#include "plugin_host/plugin_library.hpp"

#include "hb/session_desc.hpp"

#include <dlfcn.h>
#include <elf.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <exception>
#include <fstream>
#include <mutex>

namespace harness::plugin_host {

namespace {

// The library's handle, never closed, not even at exit. A library's own threads (an OpenMP pool
// still spinning after the last step) may run while the process exits, and would crash in code
// that an unload had unmapped.
void* open_for_good(const std::filesystem::path& path) {
    static std::mutex mutex;
    std::lock_guard<std::mutex> lock(mutex);
    dlerror();
    return dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
}

// dlerror()'s text without the file name it starts with: the message names the file once.
std::string loader_error(const std::filesystem::path& path) {
    const char* error = dlerror();
    std::string text = error ? error : "unknown error";
    const std::string prefix = path.string() + ": ";
    if (text.compare(0, prefix.size(), prefix) == 0) text.erase(0, prefix.size());
    return text;
}

// What is wrong with the file as a shared library for this machine, before the dynamic loader
// maps it: a file shorter than its own ELF headers say (a partial copy, an interrupted build) is
// mapped past its end by the loader, which dies of SIGBUS instead of failing. "" when it looks
// whole.
std::string elf_problem(const std::filesystem::path& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return "no such file";
    if (!std::filesystem::is_regular_file(path, ec)) return "not a regular file";
    const uint64_t size = std::filesystem::file_size(path, ec);
    std::ifstream in(path, std::ios::binary);
    if (ec || !in) return "cannot read the file";
    Elf64_Ehdr header{};
    in.read(reinterpret_cast<char*>(&header), sizeof header);
    const auto got = static_cast<uint64_t>(in.gcount());
    if (got < SELFMAG || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0)
        return "not a shared library (not an ELF file)";
    if (got < sizeof header)
        return "truncated: the file has " + std::to_string(size) +
               " bytes, less than an ELF header; not a valid shared library";
    if (header.e_ident[EI_CLASS] != ELFCLASS64)
        return "not a 64-bit shared library (ELF class " +
               std::to_string(header.e_ident[EI_CLASS]) + ")";
    if (header.e_type != ET_DYN)
        return "not a shared library (ELF type " + std::to_string(header.e_type) + ")";
    uint64_t needed = sizeof header;
    needed =
        std::max<uint64_t>(needed, header.e_phoff + uint64_t(header.e_phnum) * header.e_phentsize);
    needed =
        std::max<uint64_t>(needed, header.e_shoff + uint64_t(header.e_shnum) * header.e_shentsize);
    if (size >= needed && header.e_phentsize == sizeof(Elf64_Phdr)) {
        in.seekg(static_cast<std::streamoff>(header.e_phoff));
        for (int i = 0; i < header.e_phnum && in; ++i) {
            Elf64_Phdr segment{};
            in.read(reinterpret_cast<char*>(&segment), sizeof segment);
            if (in && segment.p_type == PT_LOAD)
                needed = std::max<uint64_t>(needed, segment.p_offset + segment.p_filesz);
        }
    }
    if (size < needed)
        return "truncated: the file has " + std::to_string(size) +
               " bytes, its ELF headers describe " + std::to_string(needed) +
               "; not a valid shared library (a partial copy?)";
    return "";
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
    if (const std::string problem = elf_problem(path); !problem.empty())
        throw PluginLoadError(path.string() + ": cannot load: " + problem);
    void* library = open_for_good(path);
    if (library == nullptr)
        throw PluginLoadError(path.string() + ": cannot load: " + loader_error(path));
    void* symbol = dlsym(library, HB_ENTRY_SYMBOL);
    if (symbol == nullptr)
        throw PluginLoadError(path.string() + ": not a harness plugin: no '" HB_ENTRY_SYMBOL
                                              "' symbol");
    using Entry = const hb_plugin_api* (*)();
    const hb_plugin_api* api = reinterpret_cast<Entry>(symbol)();
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

bool PluginLibrary::can_read_gradients() const {
    return (info_->capabilities & HB_CAP_GRADIENTS) && api_->read_gradients;
}

bool PluginLibrary::can_profile() const {
    constexpr size_t size = offsetof(hb_plugin_api, read_events) + sizeof(void*);
    return (info_->capabilities & HB_CAP_PROFILE) && api_->struct_size >= size &&
           api_->set_profiling && api_->read_events;
}

bool PluginLibrary::can_split_step() const {
    constexpr size_t size = offsetof(hb_plugin_api, apply_update) + sizeof(void*);
    return (info_->capabilities & HB_CAP_DATA_PARALLEL) && api_->struct_size >= size &&
           api_->gradient_buffers && api_->forward_backward && api_->apply_update;
}

bool PluginLibrary::can_read_input_gradient() const {
    constexpr size_t size = offsetof(hb_plugin_api, read_input_gradient) + sizeof(void*);
    return (info_->capabilities & HB_CAP_INPUT_GRADIENT) && api_->struct_size >= size &&
           api_->read_input_gradient;
}

std::optional<std::vector<hb::OptionSpec>> PluginLibrary::declared_options() const {
    constexpr size_t size = offsetof(hb_plugin_info, options) + sizeof(void*);
    if (info_->struct_size < size || info_->option_size == 0) return std::nullopt;
    std::vector<hb::OptionSpec> specs;
    const auto* bytes = reinterpret_cast<const unsigned char*>(info_->options);
    for (int32_t i = 0; i < info_->num_options; ++i) {
        hb_option_spec c{};
        std::memcpy(&c, bytes + static_cast<size_t>(i) * info_->option_size,
                    std::min<size_t>(info_->option_size, sizeof c));
        hb::OptionSpec s;
        s.key = c.key ? c.key : "";
        s.type = c.type;
        s.min = c.min;
        s.max = c.max;
        for (int32_t k = 0; k < c.num_choices; ++k) s.choices.emplace_back(c.choices[k]);
        s.description = c.description ? c.description : "";
        s.default_value = c.default_value ? c.default_value : "";  // ABI 2.5
        s.effect = c.effect;  // ABI 2.6: zero, changes the step, at an older stride
        s.checked_on = c.checked_on ? c.checked_on : "";
        specs.push_back(std::move(s));
    }
    return specs;
}

PluginSession::PluginSession(const PluginLibrary& library, const hb_session_desc& desc)
    : api_(library.api()),
      can_profile_(library.can_profile()),
      can_split_step_(library.can_split_step()),
      can_read_input_gradient_(library.can_read_input_gradient()),
      times_phases_(library.info().capabilities & HB_CAP_PHASE_TIMES),
      reports_peak_memory_(library.info().capabilities & HB_CAP_PEAK_MEMORY),
      plugin_name_(library.info().name) {
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
    return announced(result);
}

void PluginSession::read_state(float* const* tensors) {
    check(api_.read_state(session_, tensors), "read_state");
}

void PluginSession::read_gradients(float* const* gradients) {
    if (!api_.read_gradients)
        throw PluginCallError(HB_UNSUPPORTED, plugin_name_ + ": read_gradients missing");
    check(api_.read_gradients(session_, gradients), "read_gradients");
}

hb_step_result PluginSession::announced(hb_step_result result) const {
    if (!times_phases_) result.forward_ms = result.backward_ms = result.optimizer_ms = -1;
    return result;
}

uint64_t PluginSession::peak_memory() {
    uint64_t bytes = 0;
    if (!reports_peak_memory_ || !api_.peak_memory || api_.peak_memory(session_, &bytes) != HB_OK)
        return 0;
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

void PluginSession::read_input_gradient(float* gradient) {
    if (!can_read_input_gradient_)
        throw PluginCallError(HB_UNSUPPORTED,
                              plugin_name_ + ": no input gradient (no HB_CAP_INPUT_GRADIENT)");
    check(api_.read_input_gradient(session_, gradient), "read_input_gradient");
}

void PluginSession::require_split_step() const {
    if (!can_split_step_)
        throw PluginCallError(HB_UNSUPPORTED,
                              plugin_name_ + ": no data-parallel steps (no HB_CAP_DATA_PARALLEL)");
}

std::vector<hb_gradient_buffer> PluginSession::gradient_buffers(const hb_graph& graph,
                                                                void** stream) {
    require_split_step();
    const hb_gradient_buffers* list = nullptr;
    check(api_.gradient_buffers(session_, &list), "gradient_buffers");
    auto bad = [&](const std::string& what) {
        return PluginCallError(HB_ERROR, plugin_name_ + ": gradient_buffers: " + what);
    };
    if (!list || list->count < 0 || (list->count > 0 && !list->buffers))
        throw bad("no buffer list");
    if (list->buffer_size < offsetof(hb_gradient_buffer, elements) + sizeof(int64_t))
        throw bad("buffers of " + std::to_string(list->buffer_size) + " bytes");
    std::vector<bool> seen(static_cast<size_t>(graph.num_tensors), false);
    std::vector<hb_gradient_buffer> out;
    for (int32_t i = 0; i < list->count; ++i) {
        hb_gradient_buffer b{};
        std::memcpy(&b,
                    reinterpret_cast<const char*>(list->buffers) + size_t(i) * list->buffer_size,
                    sizeof b);
        if (b.tensor < 0 || b.tensor >= graph.num_tensors)
            throw bad("buffer " + std::to_string(i) + " names tensor " + std::to_string(b.tensor));
        const hb_tensor t = hb::graph_tensor(graph, b.tensor);
        if (!t.trainable || seen[static_cast<size_t>(b.tensor)])
            throw bad(std::string("tensor '") + t.name + "' is " +
                      (t.trainable ? "listed twice" : "not trainable"));
        if (!b.data || b.elements <= 0)
            throw bad(std::string("tensor '") + t.name + "' has no data");
        seen[static_cast<size_t>(b.tensor)] = true;
        out.push_back(b);
    }
    for (int32_t i = 0; i < graph.num_tensors; ++i)
        if (hb::graph_tensor(graph, i).trainable && !seen[static_cast<size_t>(i)])
            throw bad(std::string("no buffer for tensor '") + hb::graph_tensor(graph, i).name +
                      "'");
    *stream = list->stream;
    return out;
}

namespace {

struct ReadyContext {
    const std::function<void(int32_t)>* ready;
    std::exception_ptr error;
};

void on_ready(void* context, int32_t buffer) {
    auto* c = static_cast<ReadyContext*>(context);
    if (c->error) return;
    try {
        (*c->ready)(buffer);
    } catch (...) {
        c->error = std::current_exception();
    }
}

hb_step_result empty_result() {
    hb_step_result result{};
    result.struct_size = sizeof(result);
    result.forward_ms = result.backward_ms = result.optimizer_ms = -1;
    return result;
}

}  // namespace

hb_step_result PluginSession::forward_backward(int32_t batch,
                                               const std::function<void(int32_t)>& ready) {
    require_split_step();
    hb_step_result result = empty_result();
    ReadyContext context{&ready, nullptr};
    const hb_status status =
        api_.forward_backward(session_, batch, ready ? on_ready : nullptr, &context, &result);
    if (context.error) std::rethrow_exception(context.error);
    check(status, "forward_backward");
    return announced(result);
}

hb_step_result PluginSession::apply_update() {
    require_split_step();
    hb_step_result result = empty_result();
    check(api_.apply_update(session_, &result), "apply_update");
    return announced(result);
}

}  // namespace harness::plugin_host
