// Convolutions through cuDNN's graph API (the backend descriptors of cudnn_graph.h): for each
// direction of a layer an operation graph, the engine configurations cuDNN's heuristics rank
// first, each finalized into an execution plan and timed on the device, the fastest kept. The
// legacy cudnnFind*/cudnnConvolution* calls reach only cuDNN's older kernels; the graph API, the
// one PyTorch calls, reaches all of them, Hopper's among them.
#pragma once

#include "convolution.hpp"
#include "handles.hpp"
#include "math_mode.hpp"
#include "options.hpp"
#include "plan.hpp"

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

namespace hb_cudnn {

using BackendDescriptor =
    std::unique_ptr<std::remove_pointer_t<cudnnBackendDescriptor_t>,
                    CudnnDeleter<cudnnBackendDescriptor_t, cudnnBackendDestroyDescriptor>>;

enum class Direction { forward, backward_data, backward_filter };

// One direction of one layer: the chosen execution plan (shared by the layers of one shape) and
// the variant pack of the pointers it last ran with.
class GraphConvolution {
public:
    GraphConvolution() = default;
    GraphConvolution(std::shared_ptr<BackendDescriptor> plan, AlgorithmChoice choice)
        : plan_(std::move(plan)), choice_(std::move(choice)) {}
    explicit operator bool() const { return plan_ != nullptr; }
    const AlgorithmChoice& choice() const { return choice_; }

    // x, w and y are the direction's tensors: (x, w, y), (dx, w, dy) or (x, dw, dy).
    void run(cudnnHandle_t handle, const void* x, const void* w, const void* y, void* workspace);

private:
    std::shared_ptr<BackendDescriptor> plan_;
    AlgorithmChoice choice_;
    BackendDescriptor pack_;
    std::array<const void*, 4> bound_{};
};

// Chooses and caches by shape, direction and output blending; the scratch tensors it times on
// are allocated here, large enough for every convolution of `plan`.
class GraphConvolutionSearch {
public:
    // cuDNN's heuristics rank the engine configurations; of those the math mode admits, the
    // first this many are timed.
    static constexpr int candidates_timed = 8;

    GraphConvolutionSearch(cudnnHandle_t handle, const Plan& plan, size_t workspace_limit,
                           const MathMode& mode, Layout layout);
    // HB_UNSUPPORTED when no engine cuDNN proposes runs within the limit in the math mode.
    GraphConvolution choose(const LayerPlan& layer, Direction direction, bool accumulate);
    int measured() const { return int(shapes_.size()); }  // distinct convolution shapes

private:
    struct Candidate {
        std::shared_ptr<BackendDescriptor> plan;
        AlgorithmChoice choice;
    };
    Candidate search(const LayerPlan& layer, Direction direction, bool accumulate);

    cudnnHandle_t handle_;
    cudaStream_t stream_ = nullptr;
    size_t workspace_limit_;
    MathMode mode_;
    Layout layout_;
    SearchScratch scratch_;
    std::map<std::string, Candidate> cache_;
    std::set<std::string> shapes_;
};

}  // namespace hb_cudnn
