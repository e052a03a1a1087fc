// The building blocks of the step's operations: buffer references, primitive, reorder and host
// operations, and where a layer's backward pass writes the gradient of an input.
#include "hb/plugin.hpp"
#include "kernels.hpp"
#include "layout.hpp"
#include "training_step.hpp"

#include <algorithm>

namespace hb_onednn {

TrainingStep::Ref TrainingStep::value_ref(int v) const {
    if (v == graph_.input) return fixed(input_);
    return Ref{plan_.values[v], value_block_[v], {}};
}

TrainingStep::Ref TrainingStep::gradient_ref(int v) const {
    return Ref{plan_.values[v], gradient_block_[gradients_.buffer[v]], {}};
}

TrainingStep::Ref TrainingStep::temporary(const dnnl::memory::desc& md, int layer) {
    return Ref{md, add_block(md, backward_step_of(layer), backward_step_of(layer)), {}};
}

TrainingStep::Ref TrainingStep::tensor_ref(int t) const {
    return fixed(tensors_[t].value);
}

TrainingStep::Ref TrainingStep::working_ref(int t) const {
    return fixed(tensors_[t].working ? tensors_[t].working : tensors_[t].value);
}

TrainingStep::Ref TrainingStep::tensor_gradient_ref(int t, int layer) {
    if (tensors_[t].gradient) return fixed(tensors_[t].gradient);
    return temporary(plan_.tensors[t].master, layer);  // a frozen tensor: computed, then dropped
}

void TrainingStep::note_impl(const char* kind, const dnnl::primitive_desc_base& pd) {
    note_impl(kind, pd.impl_info_str());
}

void TrainingStep::note_impl(const char* kind, const std::string& impl) {
    auto it = std::find_if(impls_.begin(), impls_.end(),
                           [&](const auto& entry) { return entry.first == kind; });
    if (it == impls_.end()) it = impls_.insert(impls_.end(), {kind, {}});
    auto& counts = it->second;
    auto c = std::find_if(counts.begin(), counts.end(),
                          [&](const auto& entry) { return entry.first == impl; });
    if (c == counts.end())
        counts.push_back({impl, 1});
    else
        ++c->second;
}

TrainingStep::Op TrainingStep::primitive_op(int layer, const char* what, hb_phase phase,
                                            const dnnl::primitive_desc_base& pd,
                                            dnnl::primitive primitive,
                                            std::vector<std::pair<int, Ref>> refs) {
    note_impl(what, pd);
    Op op;
    op.layer = layer;
    op.what = what;
    op.phase = phase;
    op.primitive = std::move(primitive);
    op.refs = std::move(refs);
    op.scratchpad = pd.scratchpad_desc();
    scratchpad_bytes_ = std::max<uint64_t>(scratchpad_bytes_, op.scratchpad.get_size());
    return op;
}

TrainingStep::Op TrainingStep::reorder_op(int layer, const Ref& from, const Ref& to,
                                          bool accumulate) {
    const std::string name = layer >= 0 ? graph_.layers[layer].name : "(graph)";
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (accumulate) {
        dnnl::post_ops sum;
        sum.append_sum(1.0f);
        attr.set_post_ops(sum);
    }
    const auto pd = create(name, "reorder", [&] {
        return dnnl::reorder::primitive_desc(engine_, from.md, engine_, to.md, attr);
    });
    return primitive_op(layer, "reorder", HB_PHASE_REORDER, pd,
                        make_primitive<dnnl::reorder>(name, "reorder", pd),
                        {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

int TrainingStep::native_block(int l) const {
    const Layer& layer = graph_.layers[l];
    if (!settings_.native_pooling ||
        (layer.kind != HB_LAYER_MAXPOOL2D && layer.kind != HB_LAYER_UPSAMPLE))
        return 0;
    const Dims& larger =
        graph_.values[layer.kind == HB_LAYER_MAXPOOL2D ? layer.inputs[0] : layer.output];
    if (larger.h % 2 != 0 || larger.w % 2 != 0) return 0;
    const int block = channel_block(plan_.values[layer.inputs[0]]);
    return block == channel_block(plan_.values[layer.output]) ? block : 0;
}

dnnl::memory::desc TrainingStep::native_workspace(int l) const {
    return {{floats_of(plan_.values[graph_.layers[l].output])},
            dnnl::memory::data_type::u8,
            dnnl::memory::format_tag::a};
}

TrainingStep::Op TrainingStep::host_op(int layer, const char* what, hb_phase phase,
                                       std::function<void()> body) {
    Op op;
    op.layer = layer;
    op.what = what;
    op.phase = phase;
    op.host = std::move(body);
    return op;
}

TrainingStep::Ref TrainingStep::gradient_destination(const Contribution* c,
                                                     const dnnl::memory::desc& produced, int layer,
                                                     std::vector<Op>& then) {
    if (!c) return temporary(produced, layer);
    const Ref target = gradient_ref(c->value);
    if (produced == target.md) {
        if (c->delivery == Delivery::write) return target;
        const Ref temp = temporary(produced, layer);
        const int threads = settings_.threads;
        // The layer's input gradient added to what the value's other uses sent back: part of
        // the layer's backward pass.
        then.push_back(host_op(
            layer, "gradient accumulation", HB_PHASE_BACKWARD_DATA, [this, target, temp, threads] {
                add_into(floats_of(target.md), data(target), data(temp), threads);
            }));
        return temp;
    }
    const Ref temp = temporary(produced, layer);
    then.push_back(reorder_op(layer, temp, target, c->delivery != Delivery::write));
    ++backward_reorders_;
    return temp;
}

}  // namespace hb_onednn
