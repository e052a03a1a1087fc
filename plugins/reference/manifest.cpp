// The reference session's manifest: its math, threads, layout and how it convolves.
#include "hb/manifest.hpp"
#include "hb/json.hpp"
#include "session.hpp"

#include <string>
#include <type_traits>

namespace hb_reference {

template <class T>
std::string SessionOf<T>::manifest_json() {
    const std::string tile = std::to_string(Gemm<T>::MR) + "x" + std::to_string(Gemm<T>::NR);
    const std::string blocks = std::to_string(Gemm<T>::MC) + "x" + std::to_string(Gemm<T>::KC) +
                               "x" + std::to_string(Gemm<T>::NC);
    hb::JsonObject convolution;
    convolution.add_string("algorithm", "im2col + packed cache-blocked GEMM")
        .add_string("pointwise", "1x1 stride-1 convolutions multiply the input directly")
        .add("im2col_layers", step_.im2col_convolutions())
        .add("pointwise_layers", step_.pointwise_convolutions())
        .add_string("gemm_kernel", to_string(step_.tile_kernel()))
        .add_string("gemm_register_tile", tile)
        .add_string("gemm_blocks_mkn", blocks);
    hb::JsonObject m =
        hb::manifest(std::is_same_v<T, float> ? hb::Math::fp32 : hb::Math::fp64, threads());
    m.add_string("layout", "nchw")
        .add_string("placement", hb::placement_word(settings_.placement))
        .add("convolution", convolution.str())
        .add_string("batchnorm", "batch statistics and reductions accumulated in double")
        .add("fusions", std::string("[]"))
        .add("workspace_bytes", step_.workspace_bytes())
        .add_bool("same_bits_for_any_thread_count", true);
    if (settings_.rounding.enabled())
        m.add_string("rounding", "random: seed " + std::to_string(settings_.rounding.seed) + ", " +
                                     std::to_string(settings_.rounding.bits) + " significand bits");
    return m.str();
}

template std::string SessionOf<float>::manifest_json();
template std::string SessionOf<double>::manifest_json();

}  // namespace hb_reference
