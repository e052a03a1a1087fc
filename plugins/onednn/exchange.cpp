// Moving tensors and batches between the canonical host layouts and the session's own.
#include "layout.hpp"
#include "training_step.hpp"

#include <algorithm>
#include <cstring>

namespace hb_onednn {

void TrainingStep::load_tensor(int t, const float* canonical) {
    TensorStorage& s = tensors_[t];
    const dnnl::memory::desc plain = plain_desc(graph_.tensors[t].shape);
    if (s.value.get_desc() == plain) {
        std::memcpy(s.value.get_data_handle(), canonical, plain.get_size());
        if (!s.working) return;
    } else {
        dnnl::memory source(plain, engine_, const_cast<float*>(canonical));
        dnnl::reorder(source, s.value).execute(stream_, source, s.value);
    }
    if (s.working) dnnl::reorder(s.value, s.working).execute(stream_, s.value, s.working);
    stream_.wait();
}

void TrainingStep::read_tensor(int t, float* canonical) {
    export_plain(tensors_[t].value, plain_desc(graph_.tensors[t].shape), canonical);
}

void TrainingStep::read_gradient(int t, float* canonical) {
    if (tensors_[t].gradient)
        export_plain(tensors_[t].gradient, plain_desc(graph_.tensors[t].shape), canonical);
}

void TrainingStep::read_input_gradient(float* canonical) {
    const Dims& in = graph_.values[graph_.input];
    if (gradients_.buffer[graph_.input] < 0) {  // no layer that runs backward reads the input
        std::fill(canonical, canonical + in.elements(), 0.0f);
        return;
    }
    const Ref gradient = gradient_ref(graph_.input);
    export_plain(dnnl::memory(gradient.md, engine_, data(gradient)),
                 plain_desc({in.n, in.c, in.h, in.w}), canonical);
}

void TrainingStep::export_plain(const dnnl::memory& from, const dnnl::memory::desc& plain,
                                float* canonical) {
    if (from.get_desc() == plain) {
        std::memcpy(canonical, from.get_data_handle(), plain.get_size());
        return;
    }
    dnnl::memory target(plain, engine_, canonical);
    dnnl::reorder(from, target).execute(stream_, const_cast<dnnl::memory&>(from), target);
    stream_.wait();
}

void TrainingStep::load_square_average(int t, const float* canonical) {
    if (!graph_.tensors[t].trainable) return;
    dnnl::memory source(plain_desc(graph_.tensors[t].shape), engine_,
                        const_cast<float*>(canonical));
    dnnl::memory target(plan_.tensors[t].master, engine_,
                        square_averages_.floats() + tensors_[t].offset);
    dnnl::reorder(source, target).execute(stream_, source, target);
    stream_.wait();
}

void TrainingStep::set_batches(int count, const float* const* inputs, const float* const* targets) {
    const Dims& in = graph_.values[graph_.input];
    const dnnl::memory::desc input_plain = plain_desc({in.n, in.c, in.h, in.w});
    const Dims& t = graph_.target;
    const dnnl::memory::desc target_plain = plain_desc({t.n, t.c, t.h, t.w});
    const bool host = settings_.placement == HB_PLACEMENT_HOST;
    auto converted = [&](const dnnl::memory::desc& to, const dnnl::memory::desc& from,
                         const float* source) {
        AlignedBuffer buffer(to.get_size());
        dnnl::memory src(from, engine_, const_cast<float*>(source));
        dnnl::memory dst(to, engine_, buffer.bytes());
        dnnl::reorder(src, dst).execute(stream_, src, dst);
        return buffer;
    };

    batch_inputs_.clear();
    batch_targets_.clear();
    batch_targets_.resize(host ? 1 : target_layouts_.size());
    for (int b = 0; b < count; ++b) {
        batch_inputs_.push_back(
            converted(host ? input_plain : input_.get_desc(), input_plain, inputs[b]));
        for (size_t k = 0; k < batch_targets_.size(); ++k)
            batch_targets_[k].push_back(
                converted(host ? target_plain : target_layouts_[k].md, target_plain, targets[b]));
    }
    stream_.wait();
    batch_count_ = count;
    if (!host) return;
    staged_input_ = AlignedBuffer(input_.get_desc().get_size());
    input_.set_data_handle(staged_input_.bytes());
    stage_input_ = dnnl::reorder(
        dnnl::reorder::primitive_desc(engine_, input_plain, engine_, input_.get_desc()));
    staged_targets_.clear();
    stage_targets_.clear();
    for (size_t k = 0; k < target_layouts_.size(); ++k) {
        staged_targets_.emplace_back(target_layouts_[k].md.get_size());
        stage_targets_.emplace_back(
            dnnl::reorder::primitive_desc(engine_, target_plain, engine_, target_layouts_[k].md));
        current_targets_[k] = staged_targets_[k].floats();
    }
}

}  // namespace hb_onednn
