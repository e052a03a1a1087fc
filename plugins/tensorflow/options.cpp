#include "options.hpp"

#include "hb/session_desc.hpp"

namespace tensorflow_plugin {

Settings parse_settings(const hb_session_desc& desc) {
    hb::check_session_desc(desc);
    hb::require_cpu(desc, "the tensorflow backend");
    hb::Options options(desc.num_options, desc.options);
    Settings s;
    s.threads = options.get_threads();
    s.inter_op_threads = static_cast<int>(options.get_int("inter_op_threads", 1, 1, 1024));
    const std::string batchnorm = options.get_string("batchnorm", "fused");
    if (batchnorm != "fused" && batchnorm != "unfused")
        throw hb::Error("option 'batchnorm': expected fused or unfused, got '" + batchnorm + "'",
                        HB_UNSUPPORTED);
    s.fused_batchnorm = batchnorm == "fused";
    const std::string layout = options.get_string("layout", "nhwc");
    if (layout == "nchw")
        throw hb::Error(
            "option 'layout': nchw is not supported: TensorFlow's CPU kernels run Conv2D and "
            "MaxPool in NHWC only, and this backend builds NHWC graphs (layout: nhwc)",
            HB_UNSUPPORTED);
    if (layout != "nhwc")
        throw hb::Error("option 'layout': expected nhwc, got '" + layout + "'", HB_UNSUPPORTED);
    s.xla = options.get_bool("xla", false);
    if (options.has("onednn")) s.onednn = options.get_bool("onednn", false);
    const std::string feed_dtype = options.get_string("feed_dtype", "float32");
    if (feed_dtype != "float32" && feed_dtype != "float64")
        throw hb::Error("option 'feed_dtype': expected float32 or float64, got '" + feed_dtype + "'",
                        HB_UNSUPPORTED);
    // With device placement nothing is fed: the batches are uploaded once, before any step.
    s.feed_float64 = feed_dtype == "float64" && desc.placement == HB_PLACEMENT_HOST;
    options.check_all_used();
    s.placement = desc.placement;
    s.optimizer = *desc.optimizer;
    s.input_gradient = hb::wants_input_gradient(desc);
    return s;
}

}  // namespace tensorflow_plugin
