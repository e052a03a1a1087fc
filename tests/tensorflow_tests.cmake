# The TensorFlow backend's tests, when the plugin is built: its wire format, timeline rules and
# layouts without TensorFlow, and the plugin through the harness on every check config.
if(TARGET hb_tensorflow)
  hb_add_test(tensorflow_test
    SOURCES tensorflow_test.cpp
    LIBS hb_tensorflow_host hb_publish hb_layers nlohmann_json::nlohmann_json)
  add_dependencies(tensorflow_test harness hb_tensorflow hb_reference)
else()
  hb_plugin_skip_reason(tensorflow reason)
  hb_add_skipped_test(tensorflow_test "${reason}")
endif()
