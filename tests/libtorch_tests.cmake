# The LibTorch backend's tests: they load hb_libtorch.so through its C ABI and never link Torch.
if(TARGET hb_libtorch)
  hb_add_test(libtorch_test
    SOURCES libtorch_test.cpp libtorch_profile_test.cpp libtorch_session.cpp
    LIBS hb_reference_kernels hb_model hb_data hb_check ${CMAKE_DL_LIBS})
  add_dependencies(libtorch_test hb_libtorch)
else()
  hb_plugin_skip_reason(libtorch reason)
  hb_add_skipped_test(libtorch_test "${reason}")
endif()

# The data-parallel steps of the LibTorch backend through the harness's plugin classes; skipped,
# with the reason, where the plugin is not built.
hb_add_test(libtorch_split_step_test
  SOURCES libtorch_split_step_test.cpp
  LIBS hb_run hb_model hb_data hb_check)
if(TARGET hb_libtorch)
  add_dependencies(libtorch_split_step_test hb_libtorch)
  set(HB_LIBTORCH_SKIP_REASON "")
else()
  hb_plugin_skip_reason(libtorch HB_LIBTORCH_SKIP_REASON)
endif()
target_compile_definitions(libtorch_split_step_test PRIVATE
  HB_LIBTORCH_SKIP_REASON="${HB_LIBTORCH_SKIP_REASON}")

# The plugin's profiling logic that needs neither LibTorch nor a GPU, built from its source alone.
hb_add_test(libtorch_events_test
  SOURCES libtorch_events_test.cpp ${PROJECT_SOURCE_DIR}/plugins/libtorch/op_events.cpp
  LIBS hb::sdk)
target_include_directories(libtorch_events_test PRIVATE ${PROJECT_SOURCE_DIR}/plugins/libtorch)
