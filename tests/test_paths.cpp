#include "test_paths.hpp"

namespace harness::testing {

const char* source_dir() {
    return HB_TEST_SOURCE_DIR;
}
const char* binary_dir() {
    return HB_TEST_BINARY_DIR;
}
const char* plugin_dir() {
    return HB_TEST_PLUGIN_DIR;
}
const char* test_data_dir() {
    return HB_TEST_DATA_FOLDER;
}
const char* fake_plugin_dir() {
    return HB_TEST_FAKE_PLUGIN_DIR;
}
const char* communicator_dir() {
    return HB_TEST_COMMUNICATOR_DIR;
}

std::string shipped_config(const std::string& name) {
    return std::string(source_dir()) + "/configs/" + name;
}

}  // namespace harness::testing
