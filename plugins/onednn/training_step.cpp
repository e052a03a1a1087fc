#include "training_step.hpp"

#include "hb/plugin.hpp"
#include "kernels.hpp"
#include "layout.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>

namespace hb_onednn {
namespace {

constexpr int64_t kArenaAlignment = 64;
constexpr int64_t kTensorAlignment = 16;  // floats

dnnl::engine cpu_engine() {
    try {
        return dnnl::engine(dnnl::engine::kind::cpu, 0);
    } catch (const dnnl::error& e) {
        throw hb::Error(std::string("oneDNN has no CPU engine: ") + e.what(), HB_UNAVAILABLE);
    }
}

}  // namespace

TrainingStep::TrainingStep(const hb_graph& graph, const Settings& settings)
    : settings_(settings),
      graph_(hb::import_graph(graph, {"oneDNN", false})),
      topology_(hb::analyse(
          graph_,
          settings.fuse_batchnorm_relu ? hb::fusable_batchnorms(graph_) : std::vector<int>{},
          settings.input_gradient)),
      engine_(cpu_engine()),
      stream_(engine_) {
    omp_set_num_threads(settings_.threads);
    plan_ = make_plan(graph_, topology_, engine_, settings_.plain_layout);
    hb::GradientRules rules;
    rules.same_layout = [this](int a, int b) { return plan_.values[a] == plan_.values[b]; };
    gradients_ = hb::plan_gradients(graph_, topology_, rules);
    input_ = dnnl::memory(plan_.values[graph_.input], engine_, DNNL_MEMORY_NONE);
    plan_value_blocks();
    plan_parameters();
    for (int l = 0; l < graph_.num_layers(); ++l)
        if (!topology_.absorbed[l]) build_forward(l);
    for (int l = graph_.num_layers() - 1; l >= 0; --l)
        if (topology_.runs_backward[l]) build_backward(l);
    allocate_and_bind();
    list_gradient_buffers();
}

int TrainingStep::add_block(const dnnl::memory::desc& md, int first, int last) {
    // Channel padding must stay zero; a block shared with other buffers would not keep it so.
    if (has_padding(md)) {
        first = 0;
        last = last_step();
    }
    blocks_.push_back({static_cast<int64_t>(md.get_size()), first, last, {}});
    return static_cast<int>(blocks_.size()) - 1;
}

void TrainingStep::plan_value_blocks() {
    const int values = graph_.num_values();
    value_block_.assign(values, -1);
    derived_block_.assign(graph_.layers.size(), -1);
    workspace_block_.assign(graph_.layers.size(), -1);

    auto needs_input_in_backward = [&](int l) {
        const LayerPlan& p = plan_.layers[l];
        switch (graph_.layers[l].kind) {
            case HB_LAYER_CONV2D:
                return bool(p.conv_weights) && !p.reorder_source;
            case HB_LAYER_BATCHNORM:
                return bool(p.batchnorm_backward);
            case HB_LAYER_RELU:
                return bool(p.relu_backward);
            case HB_LAYER_MSE_LOSS:
                return bool(topology_.runs_backward[l]);
            default:
                return false;
        }
    };
    // An add output written by the convolutions of its inputs is live from the first of them.
    std::vector<int> first_write(values, -1);
    for (int l = graph_.num_layers() - 1; l >= 0; --l)
        if (plan_.layers[l].writes_into >= 0) first_write[plan_.layers[l].writes_into] = l;
    for (int v = 0; v < values; ++v) {
        if (v == graph_.input || !plan_.stored[v]) continue;
        const int first =
            forward_step(first_write[v] >= 0 ? first_write[v] : topology_.producer[v]);
        int last = first;
        for (const Use& use : topology_.uses[v]) {
            if (topology_.absorbed[use.layer]) continue;
            last = std::max(last, forward_step(use.layer));
            if (topology_.runs_backward[use.layer] && needs_input_in_backward(use.layer))
                last = std::max(last, backward_step_of(use.layer));
        }
        value_block_[v] = add_block(plan_.values[v], first, last);
    }
    for (int l = 0; l < graph_.num_layers(); ++l) {
        const LayerPlan& p = plan_.layers[l];
        const int until = topology_.runs_backward[l] ? backward_step_of(l) : forward_step(l);
        if (p.reorder_source)
            derived_block_[l] =
                add_block(p.source, forward_step(l), p.conv_weights ? until : forward_step(l));
        dnnl::memory::desc workspace;
        if (p.batchnorm) workspace = p.batchnorm.workspace_desc();
        if (p.pool) workspace = native_block(l) ? native_workspace(l) : p.pool.workspace_desc();
        if (!workspace.is_zero() && workspace.get_size() > 0) {
            workspace_block_[l] = add_block(workspace, forward_step(l), until);
            workspace_bytes_ += workspace.get_size();
        }
    }
    std::vector<int> member(gradients_.buffers.size(), -1);
    for (int v = 0; v < values; ++v)
        if (gradients_.buffer[v] >= 0) member[gradients_.buffer[v]] = v;
    const int offset = 1 + graph_.num_layers();
    const int input_buffer = gradients_.buffer[graph_.input];
    for (size_t b = 0; b < gradients_.buffers.size(); ++b) {
        // The input's gradient is read after the step.
        const int last =
            static_cast<int>(b) == input_buffer ? last_step() : offset + gradients_.buffers[b].last;
        gradient_block_.push_back(
            add_block(plan_.values[member[b]], offset + gradients_.buffers[b].first, last));
    }
}

void TrainingStep::plan_parameters() {
    const int count = static_cast<int>(graph_.tensors.size());
    tensors_.resize(count);
    int64_t state_floats = 0;
    for (int t = 0; t < count; ++t) {
        const int64_t floats = floats_of(plan_.tensors[t].master);
        int64_t& total = graph_.tensors[t].trainable ? parameter_floats_ : state_floats;
        tensors_[t].offset = total;
        total += (floats + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
    }
    const auto bytes = [](int64_t floats) { return static_cast<uint64_t>(floats) * sizeof(float); };
    parameters_ = AlignedBuffer(bytes(parameter_floats_));
    gradients_buffer_ = AlignedBuffer(bytes(parameter_floats_));
    square_averages_ = AlignedBuffer(bytes(parameter_floats_));
    std::fill(square_averages_.floats(), square_averages_.floats() + parameter_floats_,
              settings_.optimizer.initial_square_average);
    if (settings_.optimizer.momentum != 0) momentum_ = AlignedBuffer(bytes(parameter_floats_));
    state_ = AlignedBuffer(bytes(state_floats));

    update_ops_.push_back(host_op(-1, "rmsprop update", HB_PHASE_UPDATE, [this] {
        rmsprop_update(settings_.optimizer, parameter_floats_, parameters_.floats(),
                       gradients_buffer_.floats(), square_averages_.floats(), momentum_.floats(),
                       settings_.threads);
    }));
    for (int t = 0; t < count; ++t) {
        TensorStorage& s = tensors_[t];
        const TensorPlan& p = plan_.tensors[t];
        const bool trainable = graph_.tensors[t].trainable;
        float* base = trainable ? parameters_.floats() : state_.floats();
        s.value = dnnl::memory(p.master, engine_, base + s.offset);
        if (trainable)
            s.gradient = dnnl::memory(p.master, engine_, gradients_buffer_.floats() + s.offset);
        if (!p.working.is_zero() && p.working != p.master) {
            s.working = create(graph_.layers[p.layer].name, "weights memory",
                               [&] { return dnnl::memory(p.working, engine_); });
            owned_bytes_ += p.working.get_size();
            update_ops_.push_back(reorder_op(p.layer, fixed(s.value), fixed(s.working), false));
            ++update_reorders_;
        }
    }
}

void TrainingStep::allocate_and_bind() {
    arena_layout_ = hb::plan_arena(blocks_, kArenaAlignment);
    arena_ = AlignedBuffer(static_cast<uint64_t>(arena_layout_.bytes));
    arena_base_ = arena_.bytes();
    scratchpad_ = AlignedBuffer(scratchpad_bytes_);
    for (auto* ops : {&forward_ops_, &backward_ops_, &update_ops_}) {
        for (Op& op : *ops) {
            if (op.host) continue;
            for (const auto& [arg, ref] : op.refs)
                op.args[arg] =
                    ref.block >= 0 ? dnnl::memory(ref.md, engine_, data(ref)) : ref.fixed;
            if (!op.scratchpad.is_zero() && op.scratchpad.get_size() > 0)
                op.args[DNNL_ARG_SCRATCHPAD] =
                    dnnl::memory(op.scratchpad, engine_, scratchpad_.bytes());
            op.refs.clear();
        }
    }
}

void TrainingStep::list_gradient_buffers() {
    std::vector<int> last_op(graph_.layers.size(), -1);
    for (size_t i = 0; i < backward_ops_.size(); ++i)
        if (backward_ops_[i].layer >= 0) last_op[backward_ops_[i].layer] = static_cast<int>(i);
    std::vector<int> trainable;
    for (int t = 0; t < static_cast<int>(graph_.tensors.size()); ++t)
        if (graph_.tensors[t].trainable) trainable.push_back(t);
    const auto completing_op = [&](int t) {
        const int layer = plan_.tensors[t].layer;
        return layer >= 0 ? last_op[layer] : -1;
    };
    std::stable_sort(trainable.begin(), trainable.end(),
                     [&](int a, int b) { return completing_op(a) < completing_op(b); });
    for (int t : trainable) {
        gradient_buffers_.push_back({t, gradients_buffer_.floats() + tensors_[t].offset,
                                     floats_of(plan_.tensors[t].master)});
        completed_by_.push_back(completing_op(t));
    }
}

float* TrainingStep::data(const Ref& ref) const {
    if (ref.block >= 0)
        return reinterpret_cast<float*>(arena_base_ + arena_layout_.offsets[ref.block]);
    return static_cast<float*>(ref.fixed.get_data_handle());
}

void TrainingStep::run(std::vector<Op>& ops, const std::function<void(int)>& done) {
    for (size_t i = 0; i < ops.size(); ++i) {
        Op& op = ops[i];
        try {
            // The CPU stream runs each primitive to completion before execute returns, so the
            // host's clock times it. Profiling off, the event costs one test of a flag.
            const hb::EventLog::Scope event(events_, op.what, op.layer, op.phase);
            if (op.host)
                op.host();
            else
                op.primitive.execute(stream_, op.args);
        } catch (const dnnl::error& e) {
            const std::string layer = op.layer >= 0 ? graph_.layers[op.layer].name : "(graph)";
            throw hb::Error("layer '" + layer + "': " + op.what + " failed: " + e.what());
        }
        if (done) done(static_cast<int>(i));
    }
    stream_.wait();
}

double TrainingStep::forward(int batch) {
    const size_t b = static_cast<size_t>(batch);
    if (settings_.placement == HB_PLACEMENT_HOST) {
        // The batch comes from host memory in the canonical layout, as a data loader hands it.
        // On the CPU that is a layout conversion within one memory, but it is the data loader's
        // copy that host placement times (a device backend's copy to the device): a transfer.
        const hb::EventLog::Scope event(events_, "batch staging", -1, HB_PHASE_TRANSFER);
        const Dims& in = graph_.values[graph_.input];
        dnnl::memory source(plain_desc({in.n, in.c, in.h, in.w}), engine_,
                            batch_inputs_[b].bytes());
        stage_input_.execute(stream_, source, input_);
        const Dims& t = graph_.target;
        for (size_t k = 0; k < target_layouts_.size(); ++k) {
            dnnl::memory from(plain_desc({t.n, t.c, t.h, t.w}), engine_,
                              batch_targets_[0][b].bytes());
            dnnl::memory to(target_layouts_[k].md, engine_, staged_targets_[k].bytes());
            stage_targets_[k].execute(stream_, from, to);
        }
    } else {
        input_.set_data_handle(batch_inputs_[b].bytes());
        for (size_t k = 0; k < target_layouts_.size(); ++k)
            current_targets_[k] = batch_targets_[k][b].floats();
    }
    run(forward_ops_);
    const hb::EventLog::Scope event(events_, "loss sum", -1, HB_PHASE_LOSS);
    double loss = 0;
    for (const LossLayer& l : losses_) loss += l.loss;
    return loss;
}

void TrainingStep::backward(const std::function<void(int)>& final) {
    size_t next = 0;
    // A gradient no operation writes (its layer sends nothing back) is zero.
    for (; next < completed_by_.size() && completed_by_[next] < 0; ++next) {
        const GradientBuffer& g = gradient_buffers_[next];
        std::fill(g.data, g.data + g.floats, 0.0f);
        if (final) final(static_cast<int>(next));
    }
    run(backward_ops_, [&](int op) {
        if (next == completed_by_.size() || completed_by_[next] != op) return;
        stream_.wait();
        for (; next < completed_by_.size() && completed_by_[next] == op; ++next)
            if (final) final(static_cast<int>(next));
    });
}

void TrainingStep::update() {
    run(update_ops_);
}

uint64_t TrainingStep::allocated_bytes() const {
    uint64_t bytes = arena_.size() + scratchpad_.size() + parameters_.size() +
                     gradients_buffer_.size() + square_averages_.size() + momentum_.size() +
                     state_.size() + staged_input_.size() + owned_bytes_;
    for (const auto& b : batch_inputs_) bytes += b.size();
    for (const auto& list : batch_targets_)
        for (const auto& b : list) bytes += b.size();
    for (const auto& b : staged_targets_) bytes += b.size();
    return bytes;
}

}  // namespace hb_onednn
