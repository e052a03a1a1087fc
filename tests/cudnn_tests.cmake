# The cuDNN backend's tests, when the plugin is built: its host-side plan, cuDNN descriptors and
# kernel arithmetic on the CPU, and its training step (plain and profiled) against the reference
# backend on a GPU (skipped visibly without).
if(TARGET hb_cudnn)
  hb_add_test(cudnn_test
    SOURCES cudnn_test.cpp cudnn_plan_test.cpp cudnn_descriptors_test.cpp cudnn_kernel_math_test.cpp
      cudnn_plan_execution_test.cpp cudnn_small_hourglass.cpp
    LIBS hb_cudnn_descriptors hb_cudnn_plan hb_reference_kernels hb_model hb_data hb_check
      ${CMAKE_DL_LIBS})
  add_dependencies(cudnn_test hb_reference)
  # The static CUDA runtime, as the plugin's: the test reads and clears the plugin's gradient
  # buffers in device memory, and still needs no CUDA library where it runs.
  find_package(CUDAToolkit 12 REQUIRED)
  hb_add_test(cudnn_gpu_test
    SOURCES cudnn_gpu_test.cpp cudnn_gpu_profile_test.cpp cudnn_gpu_split_step_test.cpp
      cudnn_gpu_input_gradient_test.cpp cudnn_gpu_description_test.cpp cudnn_gpu_session.cpp
    LIBS hb_reference_kernels hb_model hb_data hb_check CUDA::cudart_static ${CMAKE_DL_LIBS})
  add_dependencies(cudnn_gpu_test hb_cudnn)
else()
  hb_plugin_skip_reason(cudnn reason)
  hb_add_skipped_test(cudnn_test "${reason}")
  hb_add_skipped_test(cudnn_gpu_test "${reason}")
endif()
# The operations of a profiled step and their times on a fake clock: host code only, built
# wherever the plan is, the plugin or not.
if(TARGET hb_cudnn_plan)
  hb_add_test(cudnn_profile_test
    SOURCES cudnn_profile_test.cpp cudnn_operation_times_test.cpp cudnn_small_hourglass.cpp
    LIBS hb_cudnn_plan hb_model)
endif()
# Read off the sources, so it runs whether or not the plugin is built here.
add_test(NAME cudnn_stream_rules
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}/plugins/cudnn
    -P ${CMAKE_CURRENT_SOURCE_DIR}/cudnn_stream_rules_test.cmake)
