// Where the tests find the repository, the build and their data. Only test_paths.cpp is compiled
// with the folders (tests/CMakeLists.txt): every other test file reads them through these
// functions, so that its compilation does not depend on where the tree is and ccache shares it
// between clones.
#pragma once

#include <string>

namespace harness::testing {

const char* source_dir();        // the repository
const char* binary_dir();        // the build folder (the harness executable)
const char* plugin_dir();        // the built plugins
const char* test_data_dir();     // tests/data
const char* fake_plugin_dir();   // the fake and defect plugins
const char* communicator_dir();  // the built communicator modules

// configs/NAME of the repository: a config it ships.
std::string shipped_config(const std::string& name);

}  // namespace harness::testing

#define HB_SOURCE_DIR ::harness::testing::source_dir()
#define HB_BINARY_DIR ::harness::testing::binary_dir()
#define HB_PLUGIN_DIR ::harness::testing::plugin_dir()
#define HB_TEST_DATA_DIR ::harness::testing::test_data_dir()
#define HB_FAKE_PLUGIN_DIR ::harness::testing::fake_plugin_dir()
#define HB_COMMUNICATOR_DIR ::harness::testing::communicator_dir()
