# A oneDNN package whose dependency is missing, as Debian's is without OpenCL: its config puts its
# own find module first and requires OpenCL.
list(INSERT CMAKE_MODULE_PATH 0 ${CMAKE_CURRENT_LIST_DIR})
find_package(OpenCL REQUIRED)
