// The attainable float32 rate of this machine for the hourglass's convolutions, in GFLOP/s:
//   onednn_peak fma [threads]
//       the register-only FMA rate, the hardware's ceiling, as harness info measures it;
//   onednn_peak conv [threads] [N C K HW kernel] [fwd|bwd_data|bwd_weights]
//       one oneDNN convolution (stride 1, "same" padding, layouts of its choice) timed over
//       repeated runs, best of 10. Defaults: 2 threads, N=6, 256 -> 256 channels, 64x64, 3x3, fwd.
//   onednn_peak conv ... PASS any|nchw|nhwc
//       the same with the activations in a plain layout instead of the one oneDNN prefers.
#include <omp.h>
#include "api.hpp"
#include "roofline/ceilings.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unordered_map>

namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;
using Clock = std::chrono::steady_clock;
namespace api = hb_onednn::api;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// The harness's own measurement of the ceiling (harness/roofline/ceilings.hpp).
int fma_peak(int threads) {
    const harness::roofline::Measured m = harness::roofline::measure_fma_rate(threads);
    std::printf("fma threads=%d: %.1f GFLOP/s (best of %d; median %.1f; %s)\n", threads,
                m.best * 1e-9, m.repetitions, m.median * 1e-9, m.how.c_str());
    return 0;
}

dnnl::memory filled(const dnnl::memory::desc& d, const dnnl::engine& engine, float value) {
    dnnl::memory m(d, engine);
    auto* p = static_cast<float*>(m.get_data_handle());
    std::fill(p, p + d.get_size() / sizeof(float), value);
    return m;
}

int conv_rate(int threads, long n, long c, long k, long hw, long kernel, const std::string& pass,
              const std::string& layout) {
    const tag activations = layout == "nchw" ? tag::nchw : layout == "nhwc" ? tag::nhwc : tag::any;
    omp_set_num_threads(threads);
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    const long pad = kernel / 2;
    const dnnl::memory::desc src({n, c, hw, hw}, dt::f32, activations);
    const dnnl::memory::desc weights({k, c, kernel, kernel}, dt::f32, tag::any);
    const dnnl::memory::desc bias({k}, dt::f32, tag::a);
    const dnnl::memory::desc dst({n, k, hw, hw}, dt::f32, activations);
    const dnnl::memory::dims stride{1, 1}, padding{pad, pad};
    const dnnl::primitive_attr attr;
    const auto fwd =
        api::convolution_forward(engine, src, weights, &bias, dst, stride, padding, attr);

    dnnl::primitive prim;
    std::unordered_map<int, dnnl::memory> args;
    std::string impl;
    if (pass == "fwd") {
        prim = dnnl::convolution_forward(fwd);
        args = {{DNNL_ARG_SRC, filled(fwd.src_desc(), engine, 0.5f)},
                {DNNL_ARG_WEIGHTS, filled(fwd.weights_desc(), engine, 0.01f)},
                {DNNL_ARG_BIAS, filled(fwd.bias_desc(), engine, 0.1f)},
                {DNNL_ARG_DST, filled(fwd.dst_desc(), engine, 0.0f)}};
        impl = fwd.impl_info_str();
    } else if (pass == "bwd_data") {
        const auto pd = api::convolution_backward_data(engine, fwd.src_desc(), weights,
                                                       fwd.dst_desc(), stride, padding, attr, fwd);
        prim = dnnl::convolution_backward_data(pd);
        args = {{DNNL_ARG_DIFF_SRC, filled(pd.diff_src_desc(), engine, 0.0f)},
                {DNNL_ARG_WEIGHTS, filled(pd.weights_desc(), engine, 0.01f)},
                {DNNL_ARG_DIFF_DST, filled(pd.diff_dst_desc(), engine, 0.5f)}};
        impl = pd.impl_info_str();
    } else if (pass == "bwd_weights") {
        const auto pd = api::convolution_backward_weights(
            engine, fwd.src_desc(), weights, &bias, fwd.dst_desc(), stride, padding, attr, fwd);
        prim = dnnl::convolution_backward_weights(pd);
        args = {{DNNL_ARG_SRC, filled(pd.src_desc(), engine, 0.5f)},
                {DNNL_ARG_DIFF_WEIGHTS, filled(pd.diff_weights_desc(), engine, 0.0f)},
                {DNNL_ARG_DIFF_BIAS, filled(pd.diff_bias_desc(), engine, 0.0f)},
                {DNNL_ARG_DIFF_DST, filled(pd.diff_dst_desc(), engine, 0.5f)}};
        impl = pd.impl_info_str();
    } else {
        std::fprintf(stderr, "unknown pass '%s' (fwd, bwd_data or bwd_weights)\n", pass.c_str());
        return 2;
    }

    const double flops =
        2.0 * double(n) * double(c) * double(k) * double(kernel * kernel) * double(hw * hw);
    prim.execute(stream, args);
    stream.wait();
    double best = 1e30;
    for (int r = 0; r < 10; ++r) {
        const auto start = Clock::now();
        prim.execute(stream, args);
        stream.wait();
        best = std::min(best, seconds_since(start));
    }
    std::printf("conv %s %s N=%ld %ld->%ld %ldx%ld k=%ld threads=%d: %.2f ms, %.1f GFLOP/s\n",
                pass.c_str(), impl.c_str(), n, c, k, hw, hw, kernel, threads, best * 1e3,
                flops / best * 1e-9);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "conv";
    const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
    if (mode == "fma") return fma_peak(threads);
    if (mode != "conv") {
        std::fprintf(stderr,
                     "usage: %s fma|conv [threads] [N C K HW kernel] [pass] [any|nchw|nhwc]\n",
                     argv[0]);
        return 2;
    }
    auto arg = [&](int i, long fallback) { return argc > i ? std::atol(argv[i]) : fallback; };
    return conv_rate(threads, arg(3, 6), arg(4, 256), arg(5, 256), arg(6, 64), arg(7, 3),
                     argc > 8 ? argv[8] : "fwd", argc > 9 ? argv[9] : "any");
}
