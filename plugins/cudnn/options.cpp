#include "options.hpp"

#include "hb/plugin.hpp"

namespace hb_cudnn {

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

hb::Math sdk_math(Math math) {
    switch (math) {
        case Math::fp32:
            return hb::Math::fp32;
        case Math::tf32:
            return hb::Math::tf32;
        case Math::bf16:
            return hb::Math::bf16;
    }
    return hb::Math::fp32;
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

const std::vector<hb::OptionSpec>& option_specs() {
    static const std::vector<hb::OptionSpec> specs = {
        hb::math_option({hb::Math::fp32, hb::Math::tf32, hb::Math::bf16},
                        "the math mode: float32, TF32 tensor cores, or bfloat16 activations"),
        hb::choice_option("layout", {"nchw", "nhwc"}, "nchw", "the activations' layout"),
        hb::choice_option("convolution_api", {"graph", "legacy"}, "graph",
                          "cuDNN's graph API or its legacy calls"),
        hb::choice_option("batchnorm_api", {"ex", "legacy"}, "ex",
                          "cudnnBatchNormalization*Ex or the plain calls"),
        hb::bool_option("fuse_batchnorm_relu", false, "batch norm and its ReLU in one call"),
        hb::timing_only(
            hb::bool_option("cuda_graphs", false, "capture the step once, then replay it")),
    };
    return specs;
}

Settings parse_settings(const hb_session_desc& desc) {
    hb::check_session_desc(desc);

    Settings s;
    s.device = parse_device(desc.device ? desc.device : "");
    s.placement = desc.placement;
    s.optimizer = *desc.optimizer;
    s.input_gradient = hb::wants_input_gradient(desc);

    const hb::Options options(desc.num_options, desc.options, option_specs());
    const hb::Math math = options.get_math();
    s.math = math == hb::Math::tf32 ? Math::tf32 : math == hb::Math::bf16 ? Math::bf16 : Math::fp32;
    s.layout = options.get_string("layout") == "nhwc" ? Layout::nhwc : Layout::nchw;
    s.convolutions = options.get_string("convolution_api") == "legacy" ? ConvolutionApi::legacy
                                                                       : ConvolutionApi::graph;
    s.batchnorm =
        options.get_string("batchnorm_api") == "legacy" ? BatchNormApi::legacy : BatchNormApi::ex;
    s.fuse_batchnorm_relu = options.get_bool("fuse_batchnorm_relu");
    s.cuda_graphs = options.get_bool("cuda_graphs");
    return s;
}

}  // namespace hb_cudnn
