// A plugin built against an older ABI header, kept as it was released: tests/abi/2.4 (options in
// 2.4's shorter hb_option_spec, without defaults) or tests/abi/2.5 (without what the options
// change), HB_FIXTURE_MINOR says which. The harness reads its options at the stride the plugin
// gives, shows them, and checks a config against them; its sessions only describe it.
#include "hb/plugin.h"

static_assert(HB_API_VERSION_MAJOR == 2 && HB_API_VERSION_MINOR == HB_FIXTURE_MINOR,
              "built against an older ABI header (tests/abi/2.HB_FIXTURE_MINOR)");

namespace {

const char* const kLayouts[] = {"nhwc", "nchw"};
const hb_option_spec kOptions[] = {
    {"threads", HB_OPTION_INT, 1, 64, 0, nullptr, "threads (default: one per hardware thread)"},
    {"fused", HB_OPTION_BOOL, 0, 0, 0, nullptr, "fuse (default: true)"},
    {"layout", HB_OPTION_CHOICE, 0, 0, 2, kLayouts, "layout (default: nhwc)"},
};
const hb_device_info kDevices[] = {{"cpu", "a processor", 1, nullptr}};

hb_plugin_info make_info() {
    hb_plugin_info info{};
    info.struct_size = sizeof(hb_plugin_info);
    info.name = "fake";
    info.version = "0.0.1";
    info.description = "test fixture built against an older ABI";
    info.num_devices = 1;
    info.devices = kDevices;
    info.option_size = sizeof(hb_option_spec);
    info.num_options = 3;
    info.options = kOptions;
    return info;
}
const hb_plugin_info kInfo = make_info();

const char* error() {
    return "this fixture only describes itself";
}
hb_status describe(const hb_plugin_info** info) {
    *info = &kInfo;
    return HB_OK;
}
hb_status create_session(const hb_session_desc*, hb_session**) {
    return HB_UNSUPPORTED;
}
void destroy_session(hb_session*) {}
const char* session_error(const hb_session*) {
    return error();
}
hb_status load_state(hb_session*, const float* const*) {
    return HB_ERROR;
}
hb_status set_batches(hb_session*, int32_t, const float* const*, const float* const*) {
    return HB_ERROR;
}
hb_status step(hb_session*, int32_t, hb_step_result*) {
    return HB_ERROR;
}
hb_status read_state(hb_session*, float* const*) {
    return HB_ERROR;
}

hb_plugin_api make_table() {
    hb_plugin_api api{};
    api.api_version = HB_API_VERSION;
    api.struct_size = sizeof(hb_plugin_api);
    api.last_error = error;
    api.describe = describe;
    api.create_session = create_session;
    api.destroy_session = destroy_session;
    api.session_error = session_error;
    api.load_state = load_state;
    api.set_batches = set_batches;
    api.step = step;
    api.read_state = read_state;
    return api;
}
const hb_plugin_api kTable = make_table();

}  // namespace

extern "C" HB_EXPORT const hb_plugin_api* hb_plugin_entry(void) {
    return &kTable;
}
