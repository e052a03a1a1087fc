#include "options.hpp"

#include "hb/session_desc.hpp"

namespace hb_onednn {

const std::vector<hb::OptionSpec>& option_specs() {
    static const std::vector<hb::OptionSpec> specs = {
        hb::threads_option(),
        hb::bool_option("fuse_batchnorm_relu", true,
                        "batch norm and the ReLU after it as one primitive"),
        hb::bool_option("native_pooling", true,
                        "oneDNN's pooling primitive, else the plugin's own"),
        hb::choice_option("layout", {"blocked", "plain"}, "blocked",
                          "the activations' memory format"),
    };
    return specs;
}

Settings parse_settings(const hb_session_desc& desc) {
    hb::check_session_desc(desc);
    hb::require_cpu(desc, "the oneDNN backend");

    const hb::Options options(desc.num_options, desc.options, option_specs());
    Settings s;
    s.threads = options.get_threads();
    s.fuse_batchnorm_relu = options.get_bool("fuse_batchnorm_relu");
    s.native_pooling = options.get_bool("native_pooling");
    s.plain_layout = options.get_string("layout") == "plain";
    s.input_gradient = hb::wants_input_gradient(desc);
    s.placement = desc.placement;
    s.optimizer = *desc.optimizer;
    return s;
}

}  // namespace hb_onednn
