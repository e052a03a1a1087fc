# Configures the project with a oneDNN package whose dependency is missing and a LibTorch package
# that fails to load: configure must succeed, skip both plugins with the reason and the fix, and
# still build everything else. Run as: cmake -DSOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=... -P
# this file.
set(packages ${SOURCE_DIR}/tests/data/broken_packages)
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR} -G ${GENERATOR} -DHB_BUILD_TESTS=OFF
    -Ddnnl_DIR=${packages}/dnnl -DTorch_DIR=${packages}/Torch
  RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT result EQUAL 0)
  message(FATAL_ERROR "configure stopped (exit ${result}) on a broken optional package")
endif()
foreach(expected
    "plugin onednn: not built: oneDNN's CMake package needs OpenCL, which is not found (install ocl-icd-opencl-dev)"
    "plugin libtorch: not built: LibTorch's CMake package fails to load: include could not find requested file"
    "plugin reference: will be built")
  string(FIND "${out}" "${expected}" at)
  if(at LESS 0)
    message(FATAL_ERROR "configure did not say: ${expected}")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK_DIR})
