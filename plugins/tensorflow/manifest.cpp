// What a TensorFlow session says it ran: its manifest (docs/results-schema.md "manifest").
#include "hb/manifest.hpp"
#include "hb/json.hpp"
#include "kernels.hpp"
#include "session.hpp"
#include "timeline.hpp"

#include <map>
#include <string>

namespace hb_tensorflow {

std::string Session::manifest_json() {
    // The graph's nodes by part (forward, backward, update) and type, as built.
    std::map<std::string, std::map<std::string, int>> parts;
    size_t pos = 0;
    while (TF_Operation* op = TF_GraphNextOperation(step_.get(), &pos)) {
        const std::string name = TF_OperationName(op);
        parts[part_of(name)][TF_OperationOpType(op)]++;
    }
    hb::JsonObject ops;
    for (const auto& [part, types] : parts) {
        hb::JsonObject counts;
        for (const auto& [type, n] : types) counts.add(type, n);
        ops.add(part, counts.str());
    }
    hb::JsonObject executed;
    for (const auto& [type, n] : executed_types_) executed.add(type, n);
    hb::JsonObject m = hb::manifest(hb::Math::fp32, settings_.threads);
    m.add("inter_op_threads", settings_.inter_op_threads)
        .add_string("tensorflow", TF_Version())
        .add_string("layout", "nhwc")
        .add_string("placement", hb::placement_word(settings_.placement))
        .add_string("feed", settings_.placement == HB_PLACEMENT_DEVICE ? "none (a batch index)"
                            : settings_.feed_float64 ? "float64 converted to float32 each step"
                                                     : "float32")
        .add_string("batchnorm", settings_.fused_batchnorm
                                     ? "fused (FusedBatchNormV3)"
                                     : "unfused (tf.nn.moments + tf.nn.batch_normalization)")
        .add_string("optimizer", settings_.optimizer.variant == HB_RMSPROP_TENSORFLOW
                                     ? "ResourceApplyRMSProp"
                                     : "Torch's RMSProp in TensorFlow ops")
        .add_string("gradients", "TF_AddGradients")
        .add_string("gradients_source", step_.gradients_source)
        .add_string("kernels",
                    onednn_kernels_ > 0 ? "oneDNN (_Mkl ops)" : "TensorFlow's own (Eigen)")
        .add_string("onednn_environment", onednn_environment())
        .add_string("onednn_default", onednn_default_text(onednn_default()))
        .add("onednn_kernels_in_forward", onednn_kernels_)
        .add_bool("xla", settings_.xla)
        .add("xla_clusters", xla_clusters_)
        .add("graph_ops", ops.str())
        .add("forward_pass_executed", executed.str())
        .add_bool("gradients_fetched_each_step", settings_.read_back);
    return m.str();
}

}  // namespace hb_tensorflow
