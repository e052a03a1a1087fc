#include "options.hpp"

#include "devices.hpp"
#include "hb/plugin.hpp"

namespace hb_libtorch {
namespace {

c10::Device parse_device(const char* device) {
    const hb::DeviceName d = hb::parse_device(device, "the LibTorch backend");
    if (!d.cuda) return c10::Device(c10::kCPU);
    const std::string name = device;
    const int index = d.index;
    const std::string reason = cuda_unavailable_reason();
    if (!reason.empty())
        throw hb::Error("device '" + name + "' is not available: " + reason, HB_UNAVAILABLE);
    if (index >= cuda_device_count())
        throw hb::Error("device '" + name + "' is not available: " +
                            std::to_string(cuda_device_count()) + " CUDA device(s) visible",
                        HB_UNAVAILABLE);
    return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
}

}  // namespace

const std::vector<hb::OptionSpec>& option_specs() {
    static const std::vector<hb::OptionSpec> specs = {
        hb::threads_option(),
        hb::choice_option("layout", {"nchw", "nhwc"}, "nchw",
                          "the activations' and convolution weights' memory format (nhwc: "
                          "channels_last)"),
        hb::bool_option("cudnn_benchmark", std::nullopt,
                        "CUDA: time cuDNN's algorithms on first use (unset: on CUDA, true)"),
        hb::timing_only(
            hb::bool_option("cuda_graphs", false, "CUDA: capture the step once, then replay it")),
        hb::bool_option("foreach", std::nullopt,
                        "RMSProp's multi-tensor kernels, as torch.optim (unset: on CUDA, true)"),
        hb::math_option({hb::Math::fp32, hb::Math::tf32, hb::Math::fp64},
                        "the math mode: float32, TF32 tensor cores in convolutions and matrix "
                        "products (CUDA), or float64"),
    };
    return specs;
}

Settings parse_settings(const hb_session_desc& desc) {
    hb::check_session_desc(desc);

    Settings s;
    s.device = parse_device(desc.device);
    s.placement = desc.placement;
    s.optimizer = *desc.optimizer;
    s.input_gradient = hb::wants_input_gradient(desc);

    const hb::Options options(desc.num_options, desc.options, option_specs());
    s.threads = options.get_threads();
    s.channels_last = options.get_string("layout") == "nhwc";
    const bool cuda = s.device.is_cuda();
    s.cudnn_benchmark =
        (options.has("cudnn_benchmark") ? options.get_bool("cudnn_benchmark") : cuda) && cuda;
    const hb::Math math = options.get_math();
    s.tf32 = math == hb::Math::tf32;
    s.cuda_graphs = options.get_bool("cuda_graphs");
    s.foreach = options.has("foreach") ? options.get_bool("foreach") : cuda;
    if (math == hb::Math::fp64) s.dtype = c10::ScalarType::Double;
    if (!cuda) {
        if (s.tf32)
            throw hb::Error("option 'math': tf32 applies to CUDA devices only, not to \"cpu\"",
                            HB_UNSUPPORTED);
        if (s.cuda_graphs)
            throw hb::Error("option 'cuda_graphs' applies to CUDA devices only, not to \"cpu\"",
                            HB_UNSUPPORTED);
    }
    return s;
}

hb::Math math_mode(const Settings& settings) {
    if (settings.dtype == c10::ScalarType::Double) return hb::Math::fp64;
    return settings.tf32 ? hb::Math::tf32 : hb::Math::fp32;
}

}  // namespace hb_libtorch
