# The oneDNN backend's tests, when the plugin is built: its host-side logic (layouts, kernels), its
# training step against the reference backend, layer kind by layer kind and on a small stacked
# hourglass, and its profiling.
if(TARGET hb_onednn)
  hb_add_test(onednn_test
    SOURCES onednn_test.cpp onednn_conformance_test.cpp onednn_profile_test.cpp
    LIBS hb_onednn_kernels hb_reference_kernels hb_model hb_data hb_check ${CMAKE_DL_LIBS})
  add_dependencies(onednn_test hb_onednn)  # its profiling is also tested through the plugin
else()
  hb_plugin_skip_reason(onednn reason)
  hb_add_skipped_test(onednn_test "${reason}")
endif()
