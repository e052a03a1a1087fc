#include "graph_convolution.hpp"

#include "events.hpp"
#include "hb/plugin.hpp"

#include <algorithm>
#include <vector>

namespace hb_cudnn {
namespace {

// The unique ids of the three tensors of every operation graph here, in GraphConvolution::run's
// order.
constexpr int64_t x_uid = 1, w_uid = 2, y_uid = 3;
constexpr int timed_runs = 3;

BackendDescriptor make(cudnnBackendDescriptorType_t type) {
    cudnnBackendDescriptor_t d = nullptr;
    HB_CHECK(cudnnBackendCreateDescriptor(type, &d));
    return BackendDescriptor(d);
}

template <class T>
void set(const BackendDescriptor& d, cudnnBackendAttributeName_t name,
         cudnnBackendAttributeType_t type, int64_t count, const T* values) {
    HB_CHECK(cudnnBackendSetAttribute(d.get(), name, type, count, values));
}

void set_descriptor(const BackendDescriptor& d, cudnnBackendAttributeName_t name,
                    const BackendDescriptor& value) {
    cudnnBackendDescriptor_t v = value.get();
    set(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v);
}

// A 4-d tensor; the dimensions are always N, C, H, W (K, C, R, S for a filter), the strides
// say the layout.
BackendDescriptor tensor(int64_t uid, const std::array<int64_t, 4>& dims, Layout layout,
                         cudnnDataType_t type) {
    const int64_t c = dims[1], h = dims[2], w = dims[3];
    const std::array<int64_t, 4> strides = layout == Layout::nhwc
                                               ? std::array<int64_t, 4>{h * w * c, 1, w * c, c}
                                               : std::array<int64_t, 4>{c * h * w, h * w, w, 1};
    BackendDescriptor d = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    set(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
    set(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data());
    set(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data());
    set(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    // Every buffer of the step starts on a 256-byte boundary (plan.hpp, include/hb/arena.hpp).
    const int64_t alignment = 16;
    set(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
    HB_CHECK(cudnnBackendFinalize(d.get()));
    return d;
}

// The descriptor type of a direction's operation and the names of its attributes; x, w and y are
// dx, w, dy for backward data and x, dw, dy for backward filter.
struct OperationAttributes {
    cudnnBackendDescriptorType_t type;
    cudnnBackendAttributeName_t x, w, y, convolution, alpha, beta;
};

OperationAttributes attributes_of(Direction direction) {
    switch (direction) {
        case Direction::forward:
            return {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA};
        case Direction::backward_data:
            return {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA};
        case Direction::backward_filter:
            break;
    }
    return {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
}

// The operation graph of one direction, owning every descriptor it refers to.
struct OperationGraph {
    BackendDescriptor x, w, y, convolution, operation, graph;
};

OperationGraph operation_graph(cudnnHandle_t handle, const LayerPlan& l, Direction direction,
                               bool accumulate, const MathMode& math, Layout layout) {
    const cudnnDataType_t type = math.data_type();
    OperationGraph g;
    g.x = tensor(x_uid, {l.in.n, l.in.c, l.in.h, l.in.w}, layout, type);
    g.w = tensor(w_uid, {l.out.c, l.in.c, l.kernel, l.kernel}, layout, type);
    g.y = tensor(y_uid, {l.out.n, l.out.c, l.out.h, l.out.w}, layout, type);

    g.convolution = make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    const int64_t dims = 2;
    const int64_t ones[2] = {1, 1}, strides[2] = {l.stride, l.stride},
                  padding[2] = {l.padding, l.padding};
    set(g.convolution, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
    set(g.convolution, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
    set(g.convolution, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims);
    set(g.convolution, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, ones);
    set(g.convolution, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, strides);
    set(g.convolution, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, padding);
    set(g.convolution, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, padding);
    HB_CHECK(cudnnBackendFinalize(g.convolution.get()));

    const OperationAttributes a = attributes_of(direction);
    const float alpha = 1, beta = accumulate ? 1.0f : 0.0f;
    g.operation = make(a.type);
    set_descriptor(g.operation, a.x, g.x);
    set_descriptor(g.operation, a.w, g.w);
    set_descriptor(g.operation, a.y, g.y);
    set_descriptor(g.operation, a.convolution, g.convolution);
    set(g.operation, a.alpha, CUDNN_TYPE_FLOAT, 1, &alpha);
    set(g.operation, a.beta, CUDNN_TYPE_FLOAT, 1, &beta);
    HB_CHECK(cudnnBackendFinalize(g.operation.get()));

    g.graph = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    cudnnBackendDescriptor_t op = g.operation.get();
    set(g.graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op);
    set(g.graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    HB_CHECK(cudnnBackendFinalize(g.graph.get()));
    return g;
}

// The engine configurations cuDNN's heuristics (mode A) propose, best first.
std::vector<BackendDescriptor> engine_configurations(const OperationGraph& g) {
    BackendDescriptor heuristics = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    set_descriptor(heuristics, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, g.graph);
    const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    set(heuristics, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    HB_CHECK(cudnnBackendFinalize(heuristics.get()));
    int64_t count = 0;
    HB_CHECK(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
    std::vector<BackendDescriptor> configurations;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (int64_t i = 0; i < count; ++i) {
        configurations.push_back(make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
        raw.push_back(configurations.back().get());
    }
    if (count > 0)
        HB_CHECK(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &count,
                                          raw.data()));
    configurations.resize(size_t(count));
    return configurations;
}

struct EngineFacts {
    int64_t index = -1;
    EngineNotes notes;
};

EngineFacts facts_of(const BackendDescriptor& configuration) {
    BackendDescriptor engine = make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    cudnnBackendDescriptor_t raw = engine.get();
    int64_t count = 0;
    HB_CHECK(cudnnBackendGetAttribute(configuration.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &raw));
    EngineFacts facts;
    HB_CHECK(cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
                                      CUDNN_TYPE_INT64, 1, &count, &facts.index));
    std::array<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT> notes{};
    HB_CHECK(cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                      CUDNN_TYPE_NUMERICAL_NOTE, int64_t(notes.size()), &count,
                                      notes.data()));
    for (int64_t i = 0; i < count; ++i) {
        const cudnnBackendNumericalNote_t note = notes[size_t(i)];
        facts.notes.tensor_core |= note == CUDNN_NUMERICAL_NOTE_TENSOR_CORE;
        facts.notes.down_converts |= note == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS;
        facts.notes.reduced_precision_reduction |=
            note == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION;
    }
    return facts;
}

BackendDescriptor variant_pack(const std::array<const void*, 4>& pointers) {
    BackendDescriptor pack = make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    const int64_t uids[3] = {x_uid, w_uid, y_uid};
    void* data[3] = {const_cast<void*>(pointers[0]), const_cast<void*>(pointers[1]),
                     const_cast<void*>(pointers[2])};
    void* workspace = const_cast<void*>(pointers[3]);
    set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
    set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, data);
    set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
    HB_CHECK(cudnnBackendFinalize(pack.get()));
    return pack;
}

const char* name_of(Direction d) {
    switch (d) {
        case Direction::forward:
            return "forward";
        case Direction::backward_data:
            return "backward-data";
        case Direction::backward_filter:
            return "backward-filter";
    }
    return "?";
}

}  // namespace

void GraphConvolution::run(cudnnHandle_t handle, const void* x, const void* w, const void* y,
                           void* workspace) {
    const std::array<const void*, 4> pointers{x, w, y, workspace};
    // The step's buffers do not move between steps, so the pack is built once per layer.
    if (!pack_ || pointers != bound_) {
        pack_ = variant_pack(pointers);
        bound_ = pointers;
    }
    HB_CHECK(cudnnBackendExecute(handle, plan_->get(), pack_.get()));
}

GraphConvolutionSearch::GraphConvolutionSearch(cudnnHandle_t handle, const Plan& plan,
                                               size_t workspace_limit, const MathMode& mode,
                                               Layout layout)
    : handle_(handle),
      workspace_limit_(workspace_limit),
      mode_(mode),
      layout_(layout),
      scratch_(handle, plan, workspace_limit) {
    HB_CHECK(cudnnGetStream(handle_, &stream_));
}

GraphConvolution GraphConvolutionSearch::choose(const LayerPlan& layer, Direction direction,
                                                bool accumulate) {
    const std::string key =
        convolution_key(layer) + " " + name_of(direction) + (accumulate ? " +=" : "");
    auto cached = cache_.find(key);
    if (cached == cache_.end())
        cached = cache_.emplace(key, search(layer, direction, accumulate)).first;
    return GraphConvolution(cached->second.plan, cached->second.choice);
}

GraphConvolutionSearch::Candidate GraphConvolutionSearch::search(const LayerPlan& layer,
                                                                 Direction direction,
                                                                 bool accumulate) {
    shapes_.insert(convolution_key(layer));
    const OperationGraph g = operation_graph(handle_, layer, direction, accumulate, mode_, layout_);
    std::vector<BackendDescriptor> configurations = engine_configurations(g);
    Event start = make_event(), stop = make_event();
    Candidate best;
    int64_t tried = 0;
    for (const BackendDescriptor& configuration : configurations) {
        if (tried == GraphConvolutionSearch::candidates_timed) break;
        const EngineFacts facts = facts_of(configuration);
        if (!mode_.admits(facts.notes)) continue;
        auto plan =
            std::make_shared<BackendDescriptor>(make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR));
        set_descriptor(*plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, configuration);
        set(*plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle_);
        // An engine the heuristics rank may still refuse this problem.
        if (cudnnBackendFinalize(plan->get()) != CUDNN_STATUS_SUCCESS) continue;
        int64_t workspace = 0, count = 0;
        HB_CHECK(cudnnBackendGetAttribute(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                          CUDNN_TYPE_INT64, 1, &count, &workspace));
        if (workspace < 0 || size_t(workspace) > workspace_limit_) continue;
        ++tried;
        GraphConvolution trial(plan, {});
        try {
            trial.run(handle_, scratch_.x.get(), scratch_.w.get(), scratch_.y.get(),
                      scratch_.workspace.get());  // warm-up
            record_event(start.get(), stream_);
            for (int r = 0; r < timed_runs; ++r)
                trial.run(handle_, scratch_.x.get(), scratch_.w.get(), scratch_.y.get(),
                          scratch_.workspace.get());
            record_event(stop.get(), stream_);
            HB_CHECK(cudaEventSynchronize(stop.get()));
        } catch (const hb::Error& e) {
            if (e.status() == HB_OUT_OF_MEMORY) throw;
            cudaGetLastError();
            continue;
        }
        float ms = 0;
        HB_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
        ms /= timed_runs;
        if (best.plan && ms >= best.choice.milliseconds) continue;
        best.plan = plan;
        best.choice.algorithm = int(facts.index);
        best.choice.name = "engine " + std::to_string(facts.index);
        best.choice.workspace = size_t(workspace);
        best.choice.math = facts.notes.tensor_core ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
        best.choice.milliseconds = ms;
    }
    if (!best.plan)
        throw hb::Error(
            "layer '" + layer.name + "': of the " + std::to_string(configurations.size()) +
                " engines cuDNN proposes for " + convolution_key(layer) + " (" +
                name_of(direction) + "), none runs within a workspace of " +
                std::to_string(workspace_limit_) + " bytes in " + mode_.name() + " math",
            HB_UNSUPPORTED);
    return best;
}

}  // namespace hb_cudnn
