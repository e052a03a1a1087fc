#include "options.hpp"

#include "hb/plugin.hpp"

#include <cstdlib>

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

const char* to_string(Layout layout) {
    return layout == Layout::nhwc ? "nhwc" : "nchw";
}

int parse_device(const std::string& device) {
    if (device == "cuda") return 0;
    const std::string prefix = "cuda:";
    if (device.compare(0, prefix.size(), prefix) == 0 && device.size() > prefix.size()) {
        const std::string digits = device.substr(prefix.size());
        char* end = nullptr;
        const long n = std::strtol(digits.c_str(), &end, 10);
        if (*end == '\0' && n >= 0 && n < 1024 &&
            digits.find_first_not_of("0123456789") == std::string::npos)
            return static_cast<int>(n);
    }
    throw hb::Error("device '" + device +
                        "' is not available: the cudnn backend runs on CUDA devices only "
                        "(\"cuda:N\")",
                    HB_UNAVAILABLE);
}

namespace {

void check_optimizer(const hb_optimizer& o) {
    if (o.variant != HB_RMSPROP_TORCH && o.variant != HB_RMSPROP_TENSORFLOW)
        throw hb::Error(
            "optimizer: unknown RMSProp variant " + std::to_string(static_cast<int>(o.variant)),
            HB_UNSUPPORTED);
    if (!(o.learning_rate >= 0) || !(o.alpha >= 0 && o.alpha <= 1) || !(o.eps >= 0) ||
        !(o.momentum >= 0) || !(o.weight_decay >= 0) || !(o.initial_square_average >= 0))
        throw hb::Error(
            "optimizer: learning rate, eps, momentum, weight decay and initial square average "
            "must be non-negative and alpha in [0, 1]");
}

}  // namespace

Settings parse_settings(const hb_session_desc& desc) {
    if (desc.struct_size < sizeof(hb_session_desc))
        throw hb::Error("session description is too small (" + std::to_string(desc.struct_size) +
                        " bytes, expected " + std::to_string(sizeof(hb_session_desc)) + ")");
    if (!desc.graph || !desc.optimizer)
        throw hb::Error("session description has no graph or optimizer");
    if (desc.placement != HB_PLACEMENT_DEVICE && desc.placement != HB_PLACEMENT_HOST)
        throw hb::Error(
            "unknown data placement " + std::to_string(static_cast<int>(desc.placement)),
            HB_UNSUPPORTED);
    check_optimizer(*desc.optimizer);

    Settings s;
    s.device = parse_device(desc.device ? desc.device : "");
    s.placement = desc.placement;
    s.optimizer = *desc.optimizer;

    hb::Options options(desc.num_options, desc.options);
    const std::string math = options.get_string("math", "fp32");
    if (math == "fp32")
        s.math = Math::fp32;
    else if (math == "tf32")
        s.math = Math::tf32;
    else if (math == "bf16")
        throw hb::Error(
            "option 'math': bf16 (mixed precision) is not implemented by the cudnn backend; use "
            "fp32 or tf32",
            HB_UNSUPPORTED);
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
    s.fused_bn_relu = options.get_bool("fused_bn_relu", false);
    s.cuda_graphs = options.get_bool("cuda_graphs", false);
    options.check_all_used();
    return s;
}

}  // namespace cudnn_backend
