# Finds no OpenCL, whatever the machine has.
set(OpenCL_LIBRARY OpenCL_LIBRARY-NOTFOUND)
set(OpenCL_INCLUDE_DIR OpenCL_INCLUDE_DIR-NOTFOUND)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(OpenCL REQUIRED_VARS OpenCL_LIBRARY OpenCL_INCLUDE_DIR)
