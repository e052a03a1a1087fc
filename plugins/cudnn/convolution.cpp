#include "convolution.hpp"

#include "hb/plugin.hpp"

#include <algorithm>
#include <vector>

namespace hb_cudnn {
namespace {

const char* forward_name(cudnnConvolutionFwdAlgo_t a) {
    switch (a) {
        case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
            return "IMPLICIT_GEMM";
        case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
            return "IMPLICIT_PRECOMP_GEMM";
        case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
            return "GEMM";
        case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
            return "DIRECT";
        case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
            return "FFT";
        case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
            return "FFT_TILING";
        case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
            return "WINOGRAD";
        case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
            return "WINOGRAD_NONFUSED";
        default:
            return "unknown";
    }
}

const char* backward_data_name(cudnnConvolutionBwdDataAlgo_t a) {
    switch (a) {
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0:
            return "ALGO_0";
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1:
            return "ALGO_1";
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT:
            return "FFT";
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING:
            return "FFT_TILING";
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD:
            return "WINOGRAD";
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED:
            return "WINOGRAD_NONFUSED";
        default:
            return "unknown";
    }
}

const char* backward_filter_name(cudnnConvolutionBwdFilterAlgo_t a) {
    switch (a) {
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0:
            return "ALGO_0";
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1:
            return "ALGO_1";
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT:
            return "FFT";
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3:
            return "ALGO_3";
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED:
            return "WINOGRAD_NONFUSED";
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING:
            return "FFT_TILING";
        default:
            return "unknown";
    }
}

// The fastest result of a Find call the math mode admits (cuDNN sorts them by time).
template <class Perf>
const Perf* fastest(const std::vector<Perf>& results, int count, size_t limit,
                    const MathMode& mode) {
    for (int i = 0; i < count; ++i) {
        const Perf& r = results[i];
        if (r.status == CUDNN_STATUS_SUCCESS && r.memory <= limit && mode.admits(r.mathType))
            return &r;
    }
    return nullptr;
}

std::string key_of(const LayerPlan& l, bool backward_data) {
    return convolution_key(l) + (backward_data ? " dx" : "");
}

}  // namespace

std::string convolution_key(const LayerPlan& l) {
    return to_string(l.in) + "->" + to_string(l.out) + " k" + std::to_string(l.kernel) + " s" +
           std::to_string(l.stride) + " p" + std::to_string(l.padding);
}

cudnnTensorFormat_t tensor_format(Layout layout) {
    return layout == Layout::nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
}

void set_tensor(cudnnTensorDescriptor_t descriptor, const Shape& s, Layout layout,
                cudnnDataType_t type) {
    HB_CHECK(cudnnSetTensor4dDescriptor(descriptor, tensor_format(layout), type, int(s.n), int(s.c),
                                        int(s.h), int(s.w)));
}

ConvolutionDescriptors make_convolution_descriptors(const LayerPlan& layer, Layout layout,
                                                    const MathMode& mode) {
    // The mode's tensors and filters with float accumulation.
    const cudnnDataType_t type = mode.data_type();
    ConvolutionDescriptors d;
    d.x = make_tensor_descriptor();
    d.y = make_tensor_descriptor();
    set_tensor(d.x.get(), layer.in, layout, type);
    set_tensor(d.y.get(), layer.out, layout, type);
    if (layer.bias >= 0 && !mode.own_channel_kernels()) {
        d.bias = make_tensor_descriptor();
        set_tensor(d.bias.get(), {1, layer.out.c, 1, 1}, layout);
    }
    d.w = make_filter_descriptor();
    HB_CHECK(cudnnSetFilter4dDescriptor(d.w.get(), type, tensor_format(layout), int(layer.out.c),
                                        int(layer.in.c), int(layer.kernel), int(layer.kernel)));
    for (ConvolutionDescriptor* c : {&d.forward, &d.backward_data, &d.backward_filter}) {
        *c = make_convolution_descriptor();
        HB_CHECK(cudnnSetConvolution2dDescriptor(c->get(), int(layer.padding), int(layer.padding),
                                                 int(layer.stride), int(layer.stride), 1, 1,
                                                 CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
        HB_CHECK(cudnnSetConvolutionMathType(c->get(), mode.requested_math()));
    }
    int n = 0, c = 0, h = 0, w = 0;
    HB_CHECK(cudnnGetConvolution2dForwardOutputDim(d.forward.get(), d.x.get(), d.w.get(), &n, &c,
                                                   &h, &w));
    if (Shape{n, c, h, w} != layer.out)
        throw hb::Error("layer '" + layer.name + "': cuDNN computes the output shape " +
                        to_string(Shape{n, c, h, w}) + ", the graph says " + to_string(layer.out));
    return d;
}

SearchScratch::SearchScratch(cudnnHandle_t handle, const Plan& plan, size_t workspace_limit) {
    int64_t xs = 0, ys = 0, ws = 0;
    for (const LayerPlan& l : plan.layers()) {
        if (l.kind != HB_LAYER_CONV2D) continue;
        xs = std::max(xs, l.in.elements());
        ys = std::max(ys, l.out.elements());
        ws = std::max(ws, l.out.c * l.in.c * l.kernel * l.kernel);
    }
    if (xs == 0) return;
    x = DeviceBuffer(size_t(xs) * sizeof(float));
    y = DeviceBuffer(size_t(ys) * sizeof(float));
    w = DeviceBuffer(size_t(ws) * sizeof(float));
    workspace = DeviceBuffer(workspace_limit);
    // Finite contents: some algorithms take data-dependent time on NaNs and denormals. Set on
    // the handle's stream, which the searches run on: a non-blocking stream does not wait for
    // cudaMemset's legacy default stream.
    cudaStream_t stream = nullptr;
    HB_CHECK(cudnnGetStream(handle, &stream));
    for (const DeviceBuffer* b : {&x, &y, &w})
        HB_CHECK(cudaMemsetAsync(b->get(), 0, b->bytes(), stream));
    HB_CHECK(cudaStreamSynchronize(stream));
}

AlgorithmSearch::AlgorithmSearch(cudnnHandle_t handle, const Plan& plan, size_t workspace_limit,
                                 const MathMode& mode)
    : handle_(handle),
      workspace_limit_(workspace_limit),
      mode_(mode),
      scratch_(handle, plan, workspace_limit) {}

ConvolutionChoice AlgorithmSearch::choose(const LayerPlan& layer, ConvolutionDescriptors& d,
                                          bool backward_data) {
    const std::string key = key_of(layer, backward_data);
    auto cached = cache_.find(key);
    ConvolutionChoice choice;
    if (cached != cache_.end()) {
        choice = cached->second;
    } else {
        ++measured_;
        constexpr int requested = 16;
        int count = 0;
        auto none = [&](const char* direction) {
            return hb::Error("layer '" + layer.name + "': cuDNN offers no " + direction +
                                 " algorithm for " + key + " within a workspace of " +
                                 std::to_string(workspace_limit_) + " bytes in " + mode_.name() +
                                 " math",
                             HB_UNSUPPORTED);
        };

        std::vector<cudnnConvolutionFwdAlgoPerf_t> f(requested);
        HB_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
            handle_, d.x.get(), scratch_.x.get(), d.w.get(), scratch_.w.get(), d.forward.get(),
            d.y.get(), scratch_.y.get(), requested, &count, f.data(), scratch_.workspace.get(),
            workspace_limit_));
        const auto* best_forward = fastest(f, count, workspace_limit_, mode_);
        if (!best_forward) throw none("forward");
        choice.forward = {int(best_forward->algo), forward_name(best_forward->algo),
                          best_forward->memory, best_forward->mathType, best_forward->time};

        if (backward_data) {
            std::vector<cudnnConvolutionBwdDataAlgoPerf_t> b(requested);
            HB_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(
                handle_, d.w.get(), scratch_.w.get(), d.y.get(), scratch_.y.get(),
                d.backward_data.get(), d.x.get(), scratch_.x.get(), requested, &count, b.data(),
                scratch_.workspace.get(), workspace_limit_));
            const auto* best = fastest(b, count, workspace_limit_, mode_);
            if (!best) throw none("backward-data");
            choice.backward_data = {int(best->algo), backward_data_name(best->algo), best->memory,
                                    best->mathType, best->time};
        }

        std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> g(requested);
        HB_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(
            handle_, d.x.get(), scratch_.x.get(), d.y.get(), scratch_.y.get(),
            d.backward_filter.get(), d.w.get(), scratch_.w.get(), requested, &count, g.data(),
            scratch_.workspace.get(), workspace_limit_));
        const auto* best_filter = fastest(g, count, workspace_limit_, mode_);
        if (!best_filter) throw none("backward-filter");
        choice.backward_filter = {int(best_filter->algo), backward_filter_name(best_filter->algo),
                                  best_filter->memory, best_filter->mathType, best_filter->time};
        cache_.emplace(key, choice);
    }
    // Each direction runs with the math type it was measured with.
    for (AlgorithmChoice* a : {&choice.forward, &choice.backward_data, &choice.backward_filter})
        a->math = mode_.run_math(a->math);
    HB_CHECK(cudnnSetConvolutionMathType(d.forward.get(), choice.forward.math));
    if (backward_data)
        HB_CHECK(cudnnSetConvolutionMathType(d.backward_data.get(), choice.backward_data.math));
    HB_CHECK(cudnnSetConvolutionMathType(d.backward_filter.get(), choice.backward_filter.math));
    return choice;
}

}  // namespace hb_cudnn
