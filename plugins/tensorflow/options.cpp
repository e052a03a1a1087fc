#include "options.hpp"

#include "hb/session_desc.hpp"

namespace hb_tensorflow {

const std::vector<hb::OptionSpec>& option_specs() {
    static const std::vector<hb::OptionSpec> specs = {
        hb::threads_option(),
        hb::timing_only(
            hb::int_option("inter_op_threads", 1, 1024, 1, "TensorFlow's inter-op threads")),
        hb::choice_option("batchnorm", {"fused", "unfused"}, "fused",
                          "FusedBatchNormV3, or the primitive ops of tf.nn.moments and "
                          "tf.nn.batch_normalization"),
        hb::choice_option("layout", {"nhwc", "nchw"}, "nhwc",
                          "the graph's activation layout; nchw is refused on the CPU"),
        hb::bool_option("xla", false, "auto-clustering with XLA on the CPU"),
        hb::bool_option("onednn", std::nullopt,
                        "require TensorFlow's oneDNN kernels on or off, as TF_ENABLE_ONEDNN_OPTS "
                        "set them (unset: either)"),
        hb::checked_on(hb::choice_option("feed_dtype", {"float32", "float64"}, "float32",
                                         "with host placement, the fed arrays' type, converted to "
                                         "float32 as fed"),
                       "check-seed"),
    };
    return specs;
}

Settings parse_settings(const hb_session_desc& desc) {
    hb::check_session_desc(desc);
    hb::require_cpu(desc, "the tensorflow backend");
    const hb::Options options(desc.num_options, desc.options, option_specs());
    Settings s;
    s.threads = options.get_threads();
    s.inter_op_threads = static_cast<int>(options.get_int("inter_op_threads"));
    s.fused_batchnorm = options.get_string("batchnorm") == "fused";
    const std::string layout = options.get_string("layout");
    if (layout == "nchw")
        throw hb::Error(
            "option 'layout': nchw is not supported: TensorFlow's CPU kernels run Conv2D and "
            "MaxPool in NHWC only, and this backend builds NHWC graphs (layout: nhwc)",
            HB_UNSUPPORTED);
    s.xla = options.get_bool("xla");
    if (options.has("onednn")) s.onednn = options.get_bool("onednn");
    // With device placement nothing is fed: the batches are uploaded once, before any step.
    s.feed_float64 =
        options.get_string("feed_dtype") == "float64" && desc.placement == HB_PLACEMENT_HOST;
    s.placement = desc.placement;
    s.optimizer = *desc.optimizer;
    s.input_gradient = hb::wants_input_gradient(desc);
    s.read_back = hb::reads_back(desc);
    return s;
}

}  // namespace hb_tensorflow
