# How a backend plugin is built, shared by this repository's plugins (plugins/CMakeLists.txt) and
# the installed CMake package HarnessSDK (HarnessSDKConfig.cmake), which installs this file and
# plugin-export.map beside it: a MODULE hb_<name>.so without the "lib" prefix that exports only
# hb_plugin_entry, has every symbol resolved at link time, and keeps the folders of the libraries
# it links in its installed RUNPATH.
include_guard(GLOBAL)

# Adds `target`, the plugin `name` (HB_PLUGIN_NAME in its code), built from the sources that follow.
function(hb_add_plugin_module target name)
  add_library(${target} MODULE ${ARGN})
  target_link_libraries(${target} PRIVATE HarnessSDK::sdk)
  target_compile_definitions(${target} PRIVATE HB_PLUGIN_NAME="${name}")
  set(export_map ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/plugin-export.map)
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    OUTPUT_NAME hb_${name}
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    INSTALL_RPATH_USE_LINK_PATH ON
    LINK_DEPENDS ${export_map})
  target_link_options(${target} PRIVATE -Wl,--version-script=${export_map} -Wl,--no-undefined)
endfunction()
