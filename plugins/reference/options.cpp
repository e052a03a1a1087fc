#include "options.hpp"

#include "hb/session_desc.hpp"

#include <string>

namespace hb_reference {

const std::vector<hb::OptionSpec>& option_specs() {
    static const std::vector<hb::OptionSpec> specs = {
        hb::threads_option(),
        hb::choice_option(
            "gemm_kernel",
            {"auto", to_string(TileKernel::portable), to_string(TileKernel::avx2_fma)}, "auto",
            "the GEMM's inner kernel; auto: the fastest this CPU runs"),
        hb::math_option({hb::Math::fp32, hb::Math::fp64},
                        "fp64: every value, gradient and optimizer state in double, the check's "
                        "oracle"),
        hb::int_option("rounding_seed", 0, int64_t{1} << 53, 0,
                       "not 0: every layer result moved by a random relative amount of at most "
                       "2^(1 - rounding_bits), this seed's draw, and rounded back: a member of the "
                       "check's rounding-noise ensemble (0: off; fp32 only)"),
        hb::int_option(
            "rounding_bits", 2, 24, 24,
            "the significand bits whose rounding rounding_seed imitates (24: float32's)"),
    };
    return specs;
}

Settings parse_settings(const hb_session_desc& desc) {
    hb::check_session_desc(desc);
    hb::require_cpu(desc, "the reference backend");

    const hb::Options options(desc.num_options, desc.options, option_specs());
    Settings s;
    s.threads = options.get_threads();
    s.fp64 = options.get_math() == hb::Math::fp64;
    const std::string kernel = options.get_string("gemm_kernel");
    s.kernel = kernel == "auto"
                   ? (s.fp64 ? fastest_tile_kernel<double>() : fastest_tile_kernel<float>())
               : kernel == to_string(TileKernel::avx2_fma) ? TileKernel::avx2_fma
                                                           : TileKernel::portable;
    if (s.fp64 && s.kernel == TileKernel::avx2_fma)
        throw hb::Error(
            "option 'gemm_kernel': avx2_fma is a float32 kernel; math fp64 takes "
            "auto or portable",
            HB_UNSUPPORTED);
    s.rounding.seed = static_cast<uint64_t>(options.get_int("rounding_seed"));
    s.rounding.bits = static_cast<int>(options.get_int("rounding_bits"));
    if (s.fp64 && s.rounding.enabled())
        throw hb::Error(
            "option 'rounding_seed': random rounding imitates float32 and narrower "
            "formats; it takes math fp32",
            HB_UNSUPPORTED);
    s.placement = desc.placement;
    s.optimizer = *desc.optimizer;
    return s;
}

}  // namespace hb_reference
