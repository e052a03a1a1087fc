#include "session.hpp"

#include "hb/host_state.hpp"
#include "kernels.hpp"
#include "timeline.hpp"
#include "wire.hpp"

#include <tensorflow/c/c_api_experimental.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

namespace hb_tensorflow {
namespace {

int64_t epoch_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// TF_ENABLE_ONEDNN_OPTS as this process had it when the plugin, and with it TensorFlow, loaded.
OptionsPtr session_options(const Settings& s) {
    OptionsPtr options(TF_NewSessionOptions());
    wire::SessionConfig config;
    config.intra_op_threads = s.threads;
    config.inter_op_threads = s.inter_op_threads;
    config.xla = s.xla;
    const std::string proto = wire::config_proto(config);
    Status status;
    TF_SetConfig(options.get(), proto.data(), proto.size(), status.get());
    status.check("TF_SetConfig");
    // XLA compiles clusters for the CPU only with its CPU flag; global_jit_level alone marks them.
    if (s.xla) TF_SetTfXlaCpuGlobalJit(1);
    return options;
}

std::vector<int64_t> with_count(std::vector<int64_t> shape, int64_t count) {
    shape[0] = count;
    return shape;
}

}  // namespace

Session::Session(const hb_session_desc& desc)
    : ir_(hb::import_graph(*desc.graph, {"tensorflow", false})),
      settings_(parse_settings(desc)),
      step_(ir_, settings_) {
    session_ = std::make_unique<SessionHandle>(step_.get(), session_options(settings_).get());
    run_options_ = wire::traced_run_options();
}

std::vector<TensorPtr> Session::run(const std::string& what, const std::vector<TF_Output>& feeds,
                                    const std::vector<TF_Tensor*>& feed_values,
                                    const std::vector<TF_Output>& fetches,
                                    const std::vector<TF_Operation*>& targets,
                                    std::string* metadata) {
    std::vector<TF_Tensor*> outputs(fetches.size(), nullptr);
    BufferPtr options, meta;
    if (metadata) {
        options.reset(TF_NewBufferFromString(run_options_.data(), run_options_.size()));
        meta.reset(TF_NewBuffer());
    }
    Status status;
    TF_SessionRun(session_->get(), options.get(), feeds.data(), feed_values.data(),
                  int(feeds.size()), fetches.data(), outputs.data(), int(fetches.size()),
                  targets.data(), int(targets.size()), meta.get(), status.get());
    std::vector<TensorPtr> owned;
    for (TF_Tensor* t : outputs) owned.emplace_back(t);
    status.check("TF_SessionRun (" + what + ")");
    if (metadata)
        metadata->assign(static_cast<const char*>(meta->data), meta->length);
    return owned;
}

void Session::Assignments::add(const Variable& v, TensorPtr value) {
    feeds.push_back(v.value);
    values.push_back(std::move(value));
    targets.push_back(v.assign);
}

void Session::assign(Assignments& a, const std::string& what) {
    std::vector<TF_Tensor*> raw;
    for (auto& v : a.values) raw.push_back(v.get());
    run(what, a.feeds, raw, {}, a.targets);
}

void Session::reset_optimizer() {
    if (optimizer_reset_) return;
    run("the optimizer state's initial values", {}, {}, {}, step_.reset_optimizer);
    optimizer_reset_ = true;
}

void Session::load_state(const float* const* tensors) {
    Assignments a;
    for (size_t i = 0; i < ir_.tensors.size(); ++i) {
        const Variable& v = step_.state[i];
        TensorPtr value = float_tensor(v.shape, nullptr);
        oihw_to_hwio(ir_.tensors[i], tensors[i], static_cast<float*>(TF_TensorData(value.get())));
        a.add(v, std::move(value));
    }
    // The optimizer's slots take their initial values in the same run (other variables): each
    // new set of targets costs TensorFlow a pass over the whole graph.
    if (!optimizer_reset_)
        a.targets.insert(a.targets.end(), step_.reset_optimizer.begin(),
                         step_.reset_optimizer.end());
    assign(a, "load_state");
    optimizer_reset_ = state_loaded_ = true;
    inspect();
}

void Session::load_optimizer_state(const float* const* square_averages) {
    reset_optimizer();  // the other slots (momentum) keep their initial values
    const std::vector<int> slots = hb::trainable_slots(ir_);
    Assignments a;
    for (size_t i = 0; i < ir_.tensors.size(); ++i) {
        if (slots[i] < 0) continue;
        const Variable& v = step_.square_average[i];
        TensorPtr value = float_tensor(v.shape, nullptr);
        oihw_to_hwio(ir_.tensors[i], square_averages[slots[i]],
                     static_cast<float*>(TF_TensorData(value.get())));
        a.add(v, std::move(value));
    }
    assign(a, "load_optimizer_state");
}

void Session::set_batches(int32_t count, const float* const* inputs, const float* const* targets) {
    const hb::Dims in = ir_.values[size_t(ir_.input)], target = ir_.target;
    auto to_nhwc = [](const hb::Dims& d, const float* from) {
        std::vector<float> v(size_t(d.elements()));
        nchw_to_nhwc(d, from, v.data());
        return v;
    };
    host_inputs_.clear();
    host_targets_.clear();
    for (int32_t b = 0; b < count; ++b) {
        host_inputs_.push_back(to_nhwc(in, inputs[b]));
        host_targets_.push_back(to_nhwc(target, targets[b]));
    }
    if (settings_.placement == HB_PLACEMENT_DEVICE) {
        // Every batch into the session's variables; each step then feeds only its index.
        Assignments a;
        auto upload = [&](const Variable& v, const std::vector<std::vector<float>>& batches) {
            TensorPtr all = float_tensor(with_count(v.shape, count), nullptr);
            auto* to = static_cast<float*>(TF_TensorData(all.get()));
            for (const auto& b : batches) to = std::copy(b.begin(), b.end(), to);
            a.add(v, std::move(all));
        };
        upload(step_.inputs, host_inputs_);
        upload(step_.targets, host_targets_);
        assign(a, "set_batches");
        host_inputs_.clear();
        host_targets_.clear();
    } else if (settings_.feed_float64) {
        auto widen = [](std::vector<std::vector<float>>& from) {
            std::vector<std::vector<double>> to;
            for (const auto& b : from) to.emplace_back(b.begin(), b.end());
            from.clear();
            return to;
        };
        wide_inputs_ = widen(host_inputs_);
        wide_targets_ = widen(host_targets_);
    }
    batches_set_ = true;
    inspect();
}

Session::Feeds Session::batch_feeds(int32_t batch) {
    Feeds f;
    if (settings_.placement == HB_PLACEMENT_HOST) {
        // The C-API form of feed_dict: the batch copied from host memory into new tensors.
        const hb::EventLog::Scope event(events_, "feed", -1, HB_PHASE_TRANSFER);
        const auto b = size_t(batch);
        const hb::Dims in = ir_.values[size_t(ir_.input)], target = ir_.target;
        if (settings_.feed_float64) {
            auto narrowed = [](const hb::Dims& d, const std::vector<double>& from) {
                TensorPtr t = float_tensor({d.n, d.h, d.w, d.c}, nullptr);
                std::copy(from.begin(), from.end(), static_cast<float*>(TF_TensorData(t.get())));
                return t;
            };
            f.values.push_back(narrowed(in, wide_inputs_[b]));
            f.values.push_back(narrowed(target, wide_targets_[b]));
        } else {
            f.values.push_back(float_tensor({in.n, in.h, in.w, in.c}, host_inputs_[b].data()));
            f.values.push_back(
                float_tensor({target.n, target.h, target.w, target.c}, host_targets_[b].data()));
        }
        f.feeds = {step_.input_feed, step_.target_feed};
    } else {
        f.values.push_back(int32_tensor({}, {batch}));
        f.feeds = {step_.batch_index};
    }
    for (auto& v : f.values) f.raw.push_back(v.get());
    return f;
}

hb::StepResult Session::step(int32_t batch) {
    reset_optimizer();
    std::vector<TF_Output> fetches{step_.loss};
    if (settings_.read_back)
        for (const TF_Output& g : step_.gradients)
            if (g.oper) fetches.push_back(g);
    if (settings_.input_gradient) fetches.push_back(step_.input_gradient);
    events_.begin_step();
    const int64_t start_ns = events_.enabled() ? epoch_ns() : 0;
    const Feeds f = batch_feeds(batch);
    std::string metadata;
    std::vector<TensorPtr> out = run("training step", f.feeds, f.raw, fetches, step_.step_targets,
                                     events_.enabled() ? &metadata : nullptr);
    if (events_.enabled()) record_events(metadata, start_ns);
    hb::StepResult result;
    result.loss = *static_cast<const float*>(TF_TensorData(out[0].get()));
    if (settings_.input_gradient) {
        last_input_gradient_ = std::move(out.back());
        out.pop_back();
    }
    if (settings_.read_back) {
        last_gradients_.clear();
        for (size_t i = 1; i < out.size(); ++i) last_gradients_.push_back(std::move(out[i]));
    }
    return result;
}

void Session::read_state(float* const* tensors) {
    std::vector<TF_Output> fetches;
    for (const Variable& v : step_.state) fetches.push_back(v.read);
    std::vector<TensorPtr> values = run("read_state", {}, {}, fetches, {});
    for (size_t i = 0; i < ir_.tensors.size(); ++i)
        hwio_to_oihw(ir_.tensors[i], static_cast<const float*>(TF_TensorData(values[i].get())),
                     tensors[i]);
}

void Session::read_gradients(float* const* gradients) {
    if (!settings_.read_back)
        throw hb::Error(
            "read_gradients: this session fetches no gradients: its description said the harness "
            "would not read them back (hb_session_desc.read_back 0, a timed session)",
            HB_UNSUPPORTED);
    const std::vector<int> slots = hb::trainable_slots(ir_);
    for (size_t i = 0; i < ir_.tensors.size(); ++i) {
        if (slots[i] < 0) continue;
        const TensorPtr& g = last_gradients_.at(size_t(slots[i]));
        if (gradients[i])
            hwio_to_oihw(ir_.tensors[i], static_cast<const float*>(TF_TensorData(g.get())),
                         gradients[i]);
    }
}

void Session::read_input_gradient(float* gradient) {
    nhwc_to_nchw(ir_.values[size_t(ir_.input)],
                 static_cast<const float*>(TF_TensorData(last_input_gradient_.get())), gradient);
}

void Session::inspect() {
    if (inspected_ || !state_loaded_ || !batches_set_) return;
    inspected_ = true;
    const Feeds f = batch_feeds(0);
    std::string metadata;
    run("a traced forward pass at set-up", f.feeds, f.raw, {step_.loss}, {}, &metadata);
    for (const wire::NodeStats& n : wire::read_step_stats(metadata)) {
        const std::string type = wire::op_type_of_label(n.timeline_label);
        if (type.empty()) continue;
        ++executed_types_[type];
        if (type.rfind("_Mkl", 0) == 0) ++onednn_kernels_;
        if (type == "_XlaRun") ++xla_clusters_;
    }
    if (settings_.onednn && *settings_.onednn && onednn_kernels_ == 0)
        throw hb::Error(
            "option 'onednn': true, but TensorFlow ran no oneDNN kernel (TF_ENABLE_ONEDNN_OPTS was "
            "'" + onednn_environment() + "' when it loaded): set environment: "
            "{TF_ENABLE_ONEDNN_OPTS: \"1\"} in the entry",
            HB_UNSUPPORTED);
    if (settings_.onednn && !*settings_.onednn && onednn_kernels_ > 0)
        throw hb::Error(
            "option 'onednn': false, but TensorFlow ran " + std::to_string(onednn_kernels_) +
                " oneDNN kernels (TF_ENABLE_ONEDNN_OPTS was '" + onednn_environment() +
                "' when it loaded): set environment: {TF_ENABLE_ONEDNN_OPTS: \"0\"} in the entry",
            HB_UNSUPPORTED);
    if (settings_.xla && xla_clusters_ == 0)
        throw hb::Error(
            "option 'xla': true, but TensorFlow compiled no XLA cluster in this build (no _XlaRun "
            "node ran)",
            HB_UNSUPPORTED);
}

void Session::set_profiling(bool enabled) {
    events_.set_enabled(enabled);
}

const std::vector<hb_event>& Session::events() {
    return events_.events();
}

void Session::record_events(const std::string& metadata, int64_t step_start_ns) {
    for (const wire::NodeStats& n : wire::read_step_stats(metadata)) {
        const NodeEvent e = classify(n.node_name, wire::op_type_of_label(n.timeline_label),
                                     step_.layer_of(n.node_name));
        if (e.skip) continue;
        events_.add(e.name, e.layer, e.phase, double(n.start_ns - step_start_ns) * 1e-6,
                    double(n.end_ns - step_start_ns) * 1e-6,
                    "thread " + std::to_string(n.thread_id));
    }
}

}  // namespace hb_tensorflow
