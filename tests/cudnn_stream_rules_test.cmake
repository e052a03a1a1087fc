# The cudnn plugin's stream rules (docs/design.md, "The cuDNN backend"), read off its sources: no
# copy or set on the legacy default stream, which the session's non-blocking stream does not
# wait for, and phase events recorded only through record_event (events.hpp), which uses
# cudaEventRecordExternal only while the stream is captured.
# Run as: cmake -DSOURCE_DIR=<plugins/cudnn> -P cudnn_stream_rules_test.cmake
file(GLOB sources ${SOURCE_DIR}/*.cpp ${SOURCE_DIR}/*.hpp ${SOURCE_DIR}/*.cu ${SOURCE_DIR}/*.cuh)
if(NOT sources)
  message(FATAL_ERROR "no sources in '${SOURCE_DIR}'")
endif()
set(violations "")
foreach(source IN LISTS sources)
  get_filename_component(name ${source} NAME)
  file(STRINGS ${source} lines)
  set(number 0)
  foreach(line IN LISTS lines)
    math(EXPR number "${number} + 1")
    if(line MATCHES "^[ ]*//")
      continue()
    endif()
    if(line MATCHES "cuda(Memcpy|Memset|Memcpy2D|Memcpy3D|MemcpyToSymbol)[ ]*\\("
        OR line MATCHES "cudaDeviceSynchronize|cudaStreamLegacy|cudaStreamPerThread"
        OR (line MATCHES "cudaEventRecord" AND NOT name STREQUAL "events.hpp"))
      string(STRIP "${line}" code)
      string(APPEND violations "\n  ${name}:${number}: ${code}")
    endif()
  endforeach()
endforeach()
if(violations)
  message(FATAL_ERROR "the cudnn plugin breaks its stream rules:${violations}")
endif()
list(LENGTH sources count)
message(STATUS "cudnn stream rules: ${count} files, no violation")
