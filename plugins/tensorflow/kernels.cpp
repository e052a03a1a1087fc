#include "kernels.hpp"

#include "hb/cpu.hpp"

#include <cstdlib>

namespace hb_tensorflow {
namespace {

const std::string& environment_at_load() {
    static const std::string value = [] {
        const char* v = std::getenv("TF_ENABLE_ONEDNN_OPTS");
        return std::string(v ? v : "");
    }();
    return value;
}
[[maybe_unused]] const std::string& loaded = environment_at_load();

std::string joined(const std::vector<std::string>& words) {
    std::string text;
    for (const std::string& w : words) text += (text.empty() ? "" : ", ") + w;
    return text;
}

}  // namespace

const std::vector<std::string> kOnednnFeatures = {"avx512_vnni", "avx512_bf16", "avx_vnni",
                                                  "amx_tile",    "amx_int8",    "amx_bf16"};

std::string onednn_environment() {
    return environment_at_load();
}

OnednnDefault onednn_default() {
    const std::set<std::string> flags = hb::cpu_flags();
    OnednnDefault d;
    for (const std::string& f : kOnednnFeatures)
        if (flags.count(f)) d.features.push_back(f);
    d.on = !d.features.empty();
    return d;
}

std::string onednn_default_text(const OnednnDefault& d) {
    return d.on ? "on: the CPU has " + joined(d.features)
                : "off: the CPU has none of " + joined(kOnednnFeatures);
}

}  // namespace hb_tensorflow
