// Test fixtures for conformance: the reference plugin, forwarded call by call, except that
// - `perturbed`: the gradients it reads back have one element of the first tensor changed by 1%;
//   `harness check` must call it a mismatch and name that tensor;
// - `no_gradients`: it does not announce HB_CAP_GRADIENTS, and fails read_gradients; `harness
//   check` must not ask it, and compare what it does give.
#include "hb/plugin.h"

#include <dlfcn.h>

namespace {

const hb_plugin_api* reference() {
    static const hb_plugin_api* api = [] {
        void* library = dlopen(HB_REFERENCE_PLUGIN, RTLD_NOW | RTLD_LOCAL);
        if (!library) return static_cast<const hb_plugin_api*>(nullptr);
        auto entry = reinterpret_cast<hb_plugin_entry_fn>(dlsym(library, HB_ENTRY_SYMBOL));
        return entry ? entry() : nullptr;
    }();
    return api;
}

#if defined(FAKE_no_gradients)
hb_status describe_without_gradients(const hb_plugin_info** info) {
    static hb_plugin_info copy{};
    hb_status status = reference()->describe(info);
    if (status != HB_OK) return status;
    copy = **info;
    copy.capabilities &= ~static_cast<uint32_t>(HB_CAP_GRADIENTS);
    *info = &copy;
    return HB_OK;
}

hb_status refuse_gradients(hb_session*, float* const*) {
    return HB_UNSUPPORTED;
}
#else
hb_status read_perturbed_gradients(hb_session* session, float* const* gradients) {
    hb_status status = reference()->read_gradients(session, gradients);
    if (status == HB_OK && gradients[0]) gradients[0][0] *= 1.01f;
    return status;
}
#endif

}  // namespace

extern "C" HB_EXPORT const hb_plugin_api* hb_plugin_entry(void) {
    static hb_plugin_api api = [] {
        hb_plugin_api a = *reference();
#if defined(FAKE_no_gradients)
        a.describe = describe_without_gradients;
        a.read_gradients = refuse_gradients;
#else
        a.read_gradients = read_perturbed_gradients;
#endif
        return a;
    }();
    return reference() ? &api : nullptr;
}
