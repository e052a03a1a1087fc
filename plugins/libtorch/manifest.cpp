// What a LibTorch session says it ran: its manifest (docs/results-schema.md "manifest").
#include "hb/manifest.hpp"
#include "devices.hpp"
#include "hb/cpu.hpp"
#include "hb/json.hpp"
#include "session.hpp"

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include <string>

namespace hb_libtorch {

std::string Session::manifest_json() {
    const bool cuda = settings_.device.is_cuda();
    const hb_optimizer& o = step_.optimizer().settings();
    std::string convolution;
    if (cuda)
        convolution = std::string("cuDNN through ATen, algorithms by ") +
                      (settings_.cudnn_benchmark ? "benchmark (cudnn_benchmark)" : "heuristics");
    else if (at::globalContext().hasMKLDNN() && at::globalContext().userEnabledMkldnn())
        convolution = "ATen's CPU convolution: oneDNN (MKL-DNN) where ATen picks it";
    else
        convolution = "ATen's native CPU convolution (no oneDNN in this build)";

    hb::JsonArray fusions;
    if (step_.network().inplace_relus() > 0)
        fusions.add_string("ReLU in place on its input (" +
                           std::to_string(step_.network().inplace_relus()) + " layers)");
    hb::JsonObject m = hb::manifest(math_mode(settings_), at::get_num_threads());
    m.add("interop_threads", at::get_num_interop_threads())
        .add_string("device", settings_.device.str())
        .add_string("device_description", cuda ? cuda_device_description(settings_.device.index())
                                               : hb::cpu_description())
        .add_string("libtorch", libtorch_version());
    if (built_with_cuda())
        m.add_string("cuda", cuda_version()).add_string("cudnn", cudnn_version());
    m.add_string("layout", settings_.channels_last ? "nhwc (channels_last)" : "nchw")
        .add_string("placement", hb::placement_word(settings_.placement))
        .add_string("convolution", convolution);
    if (cuda) {
        m.add_bool("cudnn_benchmark", settings_.cudnn_benchmark)
            .add_bool("tf32", settings_.tf32)
            .add_bool("cuda_graphs", settings_.cuda_graphs);
        if (settings_.cuda_graphs)
            m.add_string("cuda_graph",
                         hb::captured_step_note(
                             "; each step copies its batch into the graph's input first"));
    }
    m.add_string("backward", "LibTorch autograd")
        .add_string("optimizer", std::string("RMSProp (") +
                                     (o.variant == HB_RMSPROP_TORCH ? "torch" : "tensorflow") +
                                     " variant) as in-place tensor operations, " +
                                     (step_.optimizer().multi_tensor()
                                          ? "multi-tensor (_foreach_) over every parameter at once"
                                          : "one parameter at a time") +
                                     " (option foreach)")
        .add("fusions", fusions.str())
        .add_string("phase_times", cuda ? "CUDA events on the step's stream" : "host clock")
        .add("layers", step_.network().layers());
    return m.str();
}

}  // namespace hb_libtorch
