// Which kernels TensorFlow runs on this machine: oneDNN's or its own (Eigen). TensorFlow decides
// once, when it loads: TF_ENABLE_ONEDNN_OPTS when set, else its default from the CPU's features.
#pragma once

#include <string>
#include <vector>

namespace hb_tensorflow {

// TF_ENABLE_ONEDNN_OPTS as it was when the library loaded, "" when unset.
std::string onednn_environment();

// TensorFlow's default on Linux x86 (IsMklEnabled in tensorflow/core/util/util.cc): oneDNN's
// kernels when the CPU has any of the neural-network features below.
struct OnednnDefault {
    bool on = false;
    std::vector<std::string> features;  // those of kOnednnFeatures this CPU has
};
extern const std::vector<std::string> kOnednnFeatures;  // /proc/cpuinfo's names
OnednnDefault onednn_default();

// The manifest's words: the default and why ("on: the CPU has avx512_vnni, avx512_bf16").
std::string onednn_default_text(const OnednnDefault& d);

}  // namespace hb_tensorflow
