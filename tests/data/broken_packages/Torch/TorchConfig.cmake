# A LibTorch package with a file missing from its installation.
include(${CMAKE_CURRENT_LIST_DIR}/Caffe2Targets.cmake)
