#include "options.hpp"

#include "hb/plugin.hpp"

namespace cudnn_backend {

const char* to_string(Math math) {
    switch (math) {
        case Math::fp32:
            return "fp32";
        case Math::tf32:
            return "tf32";
        case Math::bf16:
            return "bf16";
    }
    return "?";
}

int64_t element_bytes(Storage storage) {
    return storage == Storage::bf16 ? 2 : 4;
}

const char* to_string(Layout layout) {
    return layout == Layout::nhwc ? "nhwc" : "nchw";
}

int parse_device(const std::string& device) {
    const hb::DeviceName d = hb::parse_device(device.c_str(), "the cudnn backend");
    if (!d.cuda)
        throw hb::Error("device '" + device +
                            "' is not available: the cudnn backend runs on CUDA devices only "
                            "(\"cuda:N\")",
                        HB_UNAVAILABLE);
    return d.index;
}

Settings parse_settings(const hb_session_desc& desc) {
    hb::check_session_desc(desc);

    Settings s;
    s.device = parse_device(desc.device ? desc.device : "");
    s.placement = desc.placement;
    s.optimizer = *desc.optimizer;
    s.input_gradient = hb::wants_input_gradient(desc);

    hb::Options options(desc.num_options, desc.options);
    const std::string math = options.get_string("math", "fp32");
    if (math == "fp32")
        s.math = Math::fp32;
    else if (math == "tf32")
        s.math = Math::tf32;
    else if (math == "bf16")
        s.math = Math::bf16;
    else
        throw hb::Error("option 'math': expected fp32, tf32 or bf16, got '" + math + "'",
                        HB_UNSUPPORTED);
    const std::string layout = options.get_string("layout", "nchw");
    if (layout == "nchw")
        s.layout = Layout::nchw;
    else if (layout == "nhwc")
        s.layout = Layout::nhwc;
    else
        throw hb::Error("option 'layout': expected nchw or nhwc, got '" + layout + "'",
                        HB_UNSUPPORTED);
    const std::string convolutions = options.get_string("convolutions", "graph");
    if (convolutions == "graph")
        s.convolutions = ConvolutionApi::graph;
    else if (convolutions == "legacy")
        s.convolutions = ConvolutionApi::legacy;
    else
        throw hb::Error(
            "option 'convolutions': expected graph or legacy, got '" + convolutions + "'",
            HB_UNSUPPORTED);
    const std::string batchnorm = options.get_string("batchnorm", "ex");
    if (batchnorm == "ex")
        s.batchnorm = BatchNormApi::ex;
    else if (batchnorm == "legacy")
        s.batchnorm = BatchNormApi::legacy;
    else
        throw hb::Error("option 'batchnorm': expected ex or legacy, got '" + batchnorm + "'",
                        HB_UNSUPPORTED);
    s.fused_bn_relu = options.get_bool("fused_bn_relu", false);
    s.cuda_graphs = options.get_bool("cuda_graphs", false);
    options.check_all_used();
    return s;
}

}  // namespace cudnn_backend
