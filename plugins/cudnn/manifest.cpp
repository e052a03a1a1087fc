// What a cuDNN session says it ran: its manifest (docs/results-schema.md "manifest").
#include "hb/manifest.hpp"
#include "hb/json.hpp"
#include "math_mode.hpp"
#include "session.hpp"

#include <string>

namespace hb_cudnn {

std::string Session::manifest_json() {
    const MathMode mode(settings_.math);
    hb::JsonArray own_kernels;
    for (const char* k : {"relu", "maxpool2d", "upsample", "add", "mse_loss", "rmsprop"})
        own_kernels.add_string(k);
    if (mode.own_channel_kernels())
        for (const char* k : {"batchnorm", "conv_bias"}) own_kernels.add_string(k);
    if (mode.converts_weights()) own_kernels.add_string("bf16_conversion");
    hb::JsonObject m = hb::manifest(sdk_math(settings_.math), 1);
    m.add_string("layout", to_string(settings_.layout))
        .add_string("convolution_api",
                    settings_.convolutions == ConvolutionApi::graph
                        ? "graph (engines by cuDNN's heuristics, the first " +
                              std::to_string(GraphConvolutionSearch::candidates_timed) +
                              " admitted timed)"
                        : "legacy (cudnnFind*AlgorithmEx)")
        .add_string("placement", hb::placement_word(settings_.placement))
        .add_bool("cuda_graphs", settings_.cuda_graphs)
        .add_bool("input_gradient", settings_.input_gradient);
    if (settings_.cuda_graphs)
        m.add_string("cuda_graph", hb::captured_step_note(", one graph for every batch"));
    m.add_bool("fused_bn_relu_requested", settings_.fuse_batchnorm_relu)
        .add_string("device", "cuda:" + std::to_string(settings_.device))
        .add_string("device_name", device_name_)
        .add_string("compute_capability", compute_capability_)
        .add("cudnn_handle_bytes", handle_bytes_)
        .add_string("batchnorm", std::string(mode.own_channel_kernels() ? "own kernels" : "cuDNN") +
                                     " training mode (biased variance normalises, unbiased "
                                     "updates running_var)")
        .add("own_kernels", own_kernels.str());
    step_->add_manifest(m);
    return m.str();
}

}  // namespace hb_cudnn
