# hb_probe_package(<package> [ARGS <find_package arguments>...] [FIXES <dependency>=<fix>...])
#
# An optional backend's CMake package can stop the whole configure: a package config that calls
# find_package(<dependency> REQUIRED) or message(FATAL_ERROR) ends the run that loads it (Debian's
# oneDNN requires OpenCL, which libdnnl-dev does not pull in). So the package is first loaded in a
# separate CMake run; only when that succeeds does the caller load it for real.
#
# Sets in the caller's scope:
#   HB_PROBE_STATUS  found, missing (not installed) or broken (installed, but loading it fails)
#   HB_PROBE_REASON  when broken: what failed, with the fix where FIXES names the failing dependency
#                    (for example "needs OpenCL, which is not found (install ocl-icd-opencl-dev)")
# The probe's whole output is kept in <build>/package-probes/<package>/probe.log.
function(hb_probe_package package)
  cmake_parse_arguments(P "" "" "ARGS;FIXES" ${ARGN})
  set(dir ${CMAKE_BINARY_DIR}/package-probes/${package})
  file(REMOVE_RECURSE ${dir}/build)
  string(JOIN " " find_args ${P_ARGS})
  file(WRITE ${dir}/CMakeLists.txt
    "cmake_minimum_required(VERSION 3.25)\n"
    "project(probe_${package} LANGUAGES CXX)\n"
    "find_package(${package} ${find_args} QUIET)\n"
    "message(STATUS \"probe: found=\${${package}_FOUND}\")\n")

  # The probe sees what this configure sees: the compiler and the places packages are looked for.
  set(forwarded "")
  foreach(var CMAKE_CXX_COMPILER CMAKE_PREFIX_PATH CMAKE_MODULE_PATH CMAKE_FIND_ROOT_PATH
      ${package}_DIR ${package}_ROOT CMAKE_CUDA_COMPILER)
    if(DEFINED ${var})
      list(JOIN ${var} "\\;" value)
      list(APPEND forwarded "-D${var}=${value}")
    endif()
  endforeach()
  execute_process(
    COMMAND ${CMAKE_COMMAND} -S ${dir} -B ${dir}/build -G ${CMAKE_GENERATOR} ${forwarded}
    RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  file(WRITE ${dir}/probe.log "${out}${err}")

  if(result EQUAL 0 AND out MATCHES "probe: found=(TRUE|1|ON|YES)")
    set(HB_PROBE_STATUS found PARENT_SCOPE)
    set(HB_PROBE_REASON "" PARENT_SCOPE)
    return()
  endif()
  if(result EQUAL 0)
    set(HB_PROBE_STATUS missing PARENT_SCOPE)
    set(HB_PROBE_REASON "" PARENT_SCOPE)
    return()
  endif()

  # Broken: name the dependency that failed where CMake's message says it, else quote the error.
  set(dependency "")
  if(err MATCHES "Could NOT find ([A-Za-z0-9_]+)")
    set(dependency ${CMAKE_MATCH_1})
  elseif(err MATCHES "Could not find a package configuration file provided by \"([A-Za-z0-9_]+)\"")
    set(dependency ${CMAKE_MATCH_1})
  endif()
  if(dependency)
    set(reason "needs ${dependency}, which is not found")
    foreach(fix IN LISTS P_FIXES)
      if(fix MATCHES "^${dependency}=(.+)$")
        string(APPEND reason " (${CMAKE_MATCH_1})")
      endif()
    endforeach()
  else()
    string(FIND "${err}" "CMake Error" at)
    if(at LESS 0)
      set(at 0)
    endif()
    string(SUBSTRING "${err}" ${at} -1 first)
    # The message starts on the line after "CMake Error at <file>:<line> (<command>):" and ends
    # before "Call Stack".
    string(FIND "${first}" "\n" eol)
    math(EXPR eol "${eol} + 1")
    string(SUBSTRING "${first}" ${eol} -1 first)
    string(FIND "${first}" "Call Stack" end)
    string(SUBSTRING "${first}" 0 ${end} first)
    string(REGEX REPLACE "[ \n]+" " " first "${first}")
    string(STRIP "${first}" first)
    set(reason "fails to load: ${first}")
  endif()
  set(HB_PROBE_STATUS broken PARENT_SCOPE)
  set(HB_PROBE_REASON "${reason} (details: ${dir}/probe.log)" PARENT_SCOPE)
endfunction()
