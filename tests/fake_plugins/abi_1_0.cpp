// A plugin built against ABI 1.0's header (tests/abi/1.0, kept as it was released): the harness
// refuses it, naming both versions.
#include "hb/plugin.h"

static_assert(HB_API_VERSION_MAJOR == 1, "built against the ABI 1.0 header");

namespace {

hb_plugin_api make_table() {
    hb_plugin_api api{};
    api.api_version = HB_API_VERSION;
    api.struct_size = sizeof(hb_plugin_api);
    return api;
}

const hb_plugin_api table = make_table();

}  // namespace

extern "C" HB_EXPORT const hb_plugin_api* hb_plugin_entry(void) {
    return &table;
}
