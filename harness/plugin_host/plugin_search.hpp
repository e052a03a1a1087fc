// Where plugins are found: the folders of HARNESS_PLUGIN_PATH (colon-separated) first, then
// `plugins/` beside the harness executable, then, for an executable installed in a `bin/`
// folder, `../lib/harness/plugins`. A plugin named NAME lives in the file `hb_NAME.so`; the
// first folder that has it wins.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace harness::plugin_host {

std::vector<std::filesystem::path> plugin_search_path();
std::string plugin_file_name(const std::string& plugin);
std::optional<std::filesystem::path> find_plugin(const std::string& plugin);
// Why configure did not build a plugin: the first line of hb_NAME.not-built in the first folder
// on the search path that has one (written by hb_skip_plugin), if any.
std::optional<std::string> not_built_reason(const std::string& plugin);
// Every plugin file on the search path, one per plugin name, sorted by name.
std::vector<std::filesystem::path> list_plugin_files();
std::string describe_search_path();  // "a:b:c", for error messages

}  // namespace harness::plugin_host
