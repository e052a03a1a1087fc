# The LibTorch and oneDNN plugins built a second time, against Debian's libtorch-dev and
# libdnnl-dev, as libtorch_debian and onednn_debian beside the main build's plugins: the same
# source on two versions of its library, compared like two frameworks. The second build is this
# tree configured with HB_PLUGINS_ONLY and HB_PLUGIN_SUFFIX=_debian, run by `cmake --build`.
include(ExternalProject)
ExternalProject_Add(hb_debian_plugins
  SOURCE_DIR ${PROJECT_SOURCE_DIR}
  BINARY_DIR ${CMAKE_BINARY_DIR}/debian-plugins
  CMAKE_ARGS
    -G ${CMAKE_GENERATOR}
    -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE}
    -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}
    -DHB_PLUGINS_ONLY=ON
    -DHB_PYPI_PREFIX=
    -DHB_PLUGIN_SUFFIX=_debian
    -DHB_PLUGIN_OUTPUT_DIR=${HB_PLUGIN_OUTPUT_DIR}
  BUILD_ALWAYS ON
  INSTALL_COMMAND ""
  USES_TERMINAL_CONFIGURE ON
  USES_TERMINAL_BUILD ON)
if(TARGET harness)
  add_dependencies(harness hb_debian_plugins)
endif()
# `cmake --install` installs them with the main build's plugins.
install(CODE "execute_process(COMMAND \"${CMAKE_COMMAND}\" --install \"${CMAKE_BINARY_DIR}/debian-plugins\"
    --component plugins --prefix \"\${CMAKE_INSTALL_PREFIX}\" COMMAND_ERROR_IS_FATAL ANY)"
  COMPONENT plugins)
