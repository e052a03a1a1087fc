// A test fixture for conformance: the reference plugin, forwarded call by call, except that the
// gradients it reads back have one element of the first tensor changed by 1%. `harness check`
// must call it a mismatch and name that tensor.
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

hb_status read_perturbed_gradients(hb_session* session, float* const* gradients) {
    hb_status status = reference()->read_gradients(session, gradients);
    if (status == HB_OK && gradients[0]) gradients[0][0] *= 1.01f;
    return status;
}

}  // namespace

extern "C" HB_EXPORT const hb_plugin_api* hb_plugin_entry(void) {
    static hb_plugin_api api = [] {
        hb_plugin_api a = *reference();
        a.read_gradients = read_perturbed_gradients;
        return a;
    }();
    return reference() ? &api : nullptr;
}
