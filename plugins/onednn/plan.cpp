#include "plan.hpp"

#include "api.hpp"
#include "hb/plugin.hpp"
#include "layout.hpp"

#include <algorithm>
#include <string>

namespace hb_onednn {
namespace {

using md = dnnl::memory::desc;
using tag = dnnl::memory::format_tag;
constexpr auto f32 = dnnl::memory::data_type::f32;

md any_desc(const Dims& d) {
    return md({d.n, d.c, d.h, d.w}, f32, tag::any);
}

bool is_reference(const char* impl) {
    const std::string s = impl;
    return s.rfind("ref", 0) == 0;
}

class Planner {
public:
    Planner(const Graph& graph, const Topology& topology, const dnnl::engine& engine, bool plain)
        : graph_(graph), topology_(topology), engine_(engine), plain_(plain) {
        plan_.attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
        plan_.values.resize(graph.values.size());
        plan_.layers.resize(graph.layers.size());
        plan_.tensors.resize(graph.tensors.size());
    }

    Plan run() {
        for (int l = 0; l < graph_.num_layers(); ++l) {
            if (topology_.absorbed[l]) continue;
            const Layer& layer = graph_.layers[l];
            if (layer.kind != HB_LAYER_CONV2D)
                for (int v : layer.inputs)
                    if (plan_.values[v].is_zero()) plan_.values[v] = plain_value(v);
            switch (layer.kind) {
                case HB_LAYER_CONV2D:
                    conv(l);
                    break;
                case HB_LAYER_BATCHNORM:
                    batchnorm(l);
                    break;
                case HB_LAYER_RELU:
                    relu(l);
                    break;
                case HB_LAYER_MAXPOOL2D:
                    pool(l);
                    break;
                case HB_LAYER_UPSAMPLE:
                    upsample(l);
                    break;
                case HB_LAYER_ADD:
                    add(l);
                    break;
                case HB_LAYER_MSE_LOSS:
                    break;
            }
        }
        if (plan_.values[graph_.input].is_zero())
            plan_.values[graph_.input] = plain_value(graph_.input);
        plan_.stored.resize(graph_.values.size());
        for (int v = 0; v < graph_.num_values(); ++v)
            plan_.stored[v] = !plan_.values[v].is_zero() && !topology_.is_loss[v];
        // A convolution writing into a plain add output would write through a reorder.
        for (int l = 0; l < graph_.num_layers() && !plain_; ++l)
            if (graph_.layers[l].kind == HB_LAYER_ADD) fuse_add(l);
        for (int l = 0; l < graph_.num_layers(); ++l) {
            const Layer& layer = graph_.layers[l];
            for (int t : {layer.weight, layer.bias, layer.running_mean, layer.running_var})
                if (t >= 0) plan_.tensors[t].layer = l;
        }
        for (size_t t = 0; t < graph_.tensors.size(); ++t)
            if (plan_.tensors[t].master.is_zero())
                plan_.tensors[t].master = plain_desc(graph_.tensors[t].shape);
        return std::move(plan_);
    }

private:
    md plain_value(int v) const {
        const Dims& d = graph_.values[v];
        return plain_desc({d.n, d.c, d.h, d.w});
    }

    // `destination` empty: oneDNN picks the output layout; `accumulate`: adds a sum post-op.
    dnnl::convolution_forward::primitive_desc conv_forward(const Layer& layer, const md& source,
                                                           const md& destination = md(),
                                                           bool accumulate = false) {
        const Dims& y = graph_.values[layer.output];
        const dnnl::memory::dims stride{layer.stride, layer.stride};
        const dnnl::memory::dims padding{layer.padding, layer.padding};
        const md weights({y.c, graph_.values[layer.inputs[0]].c, layer.kernel, layer.kernel}, f32,
                         tag::any);
        const md dst = destination.is_zero() ? any_desc(y) : destination;
        // primitive_attr is a shared handle: a copy of plan_.attr would change it too.
        dnnl::primitive_attr attr;
        attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
        if (accumulate) {
            dnnl::post_ops sum;
            sum.append_sum(1.0f);
            attr.set_post_ops(sum);
        }
        const md bias({y.c}, f32, tag::a);
        return create(layer.name, "convolution_forward", [&] {
            return api::convolution_forward(engine_, source, weights,
                                            layer.bias >= 0 ? &bias : nullptr, dst, stride, padding,
                                            attr);
        });
    }

    void fuse_add(int a) {
        const Layer& add = graph_.layers[a];
        const int y = add.output;
        std::vector<int> fused, others;
        for (int v : add.inputs) {
            const int producer = topology_.producer[v];
            const bool single = std::count(add.inputs.begin(), add.inputs.end(), v) == 1 &&
                                topology_.uses[v].size() == 1;
            const bool conv = v != graph_.input && producer >= 0 &&
                              graph_.layers[producer].kind == HB_LAYER_CONV2D &&
                              plan_.layers[producer].writes_into < 0;
            (single && conv && plan_.values[v] == plan_.values[y] ? fused : others).push_back(v);
        }
        // The other inputs must be ready before the first convolution writes the output.
        int ready = -1;
        for (int v : others) ready = std::max(ready, topology_.producer[v]);
        std::sort(fused.begin(), fused.end(),
                  [&](int u, int v) { return topology_.producer[u] < topology_.producer[v]; });
        std::vector<int> late;
        for (int v : fused) (topology_.producer[v] > ready ? late : others).push_back(v);
        if (late.empty()) return;

        std::vector<dnnl::convolution_forward::primitive_desc> rebuilt;
        for (size_t k = 0; k < late.size(); ++k) {
            const int producer = topology_.producer[late[k]];
            const LayerPlan& p = plan_.layers[producer];
            const bool accumulate = k > 0 || !others.empty();
            rebuilt.push_back(accumulate ? conv_forward(graph_.layers[producer], p.source,
                                                        p.conv.dst_desc(), true)
                                         : p.conv);
            if (rebuilt.back().weights_desc() != p.conv.weights_desc() ||
                is_reference(rebuilt.back().impl_info_str()))
                return;
        }
        for (size_t k = 0; k < late.size(); ++k) {
            LayerPlan& p = plan_.layers[topology_.producer[late[k]]];
            p.conv = rebuilt[k];
            p.writes_into = y;
            p.accumulates = k > 0 || !others.empty();
            plan_.stored[late[k]] = false;
        }
        LayerPlan& first = plan_.layers[topology_.producer[late[0]]];
        first.initial = others;
        if (others.size() > 1 ||
            (others.size() == 1 && plan_.values[others[0]] != plan_.values[y])) {
            std::vector<md> sources;
            for (int v : others) sources.push_back(plan_.values[v]);
            first.initial_sum = create(add.name, "sum", [&] {
                return api::sum(engine_, plan_.values[y], sources, plan_.attr);
            });
        }
        plan_.layers[a].computed_by_convolutions = true;
    }

    void conv(int l) {
        const Layer& layer = graph_.layers[l];
        LayerPlan& p = plan_.layers[l];
        const int x = layer.inputs[0];
        const Dims& y = graph_.values[layer.output];
        md& input = plan_.values[x];

        // In the plain layout the primitive reads its own layout, the input reordered into it.
        auto chosen = conv_forward(layer, any_desc(graph_.values[x]));
        if (input.is_zero()) {
            input = plain_ ? plain_value(x) : chosen.src_desc();
        } else if (!plain_ && chosen.src_desc() != input) {
            // Reading the value in its own layout avoids a reorder per step, unless oneDNN only
            // has its reference implementation for that layout.
            auto forced = conv_forward(layer, input);
            if (!is_reference(forced.impl_info_str()) || is_reference(chosen.impl_info_str()))
                chosen = forced;
        }
        p.conv = chosen;
        p.source = chosen.src_desc();
        p.reorder_source = p.source != input;
        p.destination = chosen.dst_desc();
        plan_.values[layer.output] = plain_ ? plain_value(layer.output) : p.destination;
        p.reorder_destination = p.destination != plan_.values[layer.output];

        const dnnl::memory::dims stride{layer.stride, layer.stride};
        const dnnl::memory::dims padding{layer.padding, layer.padding};
        const md weights_any({y.c, graph_.values[x].c, layer.kernel, layer.kernel}, f32, tag::any);
        if (topology_.has_gradient[x]) {
            p.conv_data = create(layer.name, "convolution_backward_data", [&] {
                return api::convolution_backward_data(engine_, p.source, weights_any,
                                                      chosen.dst_desc(), stride, padding,
                                                      plan_.attr, chosen);
            });
        }
        if (topology_.runs_backward[l]) {
            const md bias({y.c}, f32, tag::a);
            p.conv_weights = create(layer.name, "convolution_backward_weights", [&] {
                return api::convolution_backward_weights(
                    engine_, p.source, weights_any, layer.bias >= 0 ? &bias : nullptr,
                    chosen.dst_desc(), stride, padding, plan_.attr, chosen);
            });
        }

        TensorPlan& w = plan_.tensors[layer.weight];
        w.working = p.conv.weights_desc();
        w.gradient = p.conv_weights ? p.conv_weights.diff_weights_desc() : w.working;
        w.backward_data = p.conv_data ? p.conv_data.weights_desc() : w.working;
        w.master = !has_padding(w.working) && w.gradient == w.working
                       ? w.working
                       : plain_desc(graph_.tensors[layer.weight].shape);
    }

    void batchnorm(int l) {
        const Layer& layer = graph_.layers[l];
        LayerPlan& p = plan_.layers[l];
        const md& data = plan_.values[layer.inputs[0]];
        auto flags = dnnl::normalization_flags::none;
        if (layer.weight >= 0) flags |= dnnl::normalization_flags::use_scale;
        if (layer.bias >= 0) flags |= dnnl::normalization_flags::use_shift;
        if (topology_.fused_relu[l] >= 0) flags |= dnnl::normalization_flags::fuse_norm_relu;
        auto forward = [&](dnnl::normalization_flags f) {
            return create(layer.name, "batch_normalization_forward", [&] {
                return api::batch_normalization_forward(engine_, data, layer.eps, f, plan_.attr);
            });
        };
        p.batchnorm_training = forward(flags);
        p.batchnorm = p.batchnorm_training;
        p.statistics_block = channel_block(data);
        if (p.statistics_block != 0) {
            auto given = forward(flags | dnnl::normalization_flags::use_global_stats);
            if (given.workspace_desc() == p.batchnorm_training.workspace_desc())
                p.batchnorm = given;
            else
                p.statistics_block = 0;
        }
        plan_.values[topology_.output[l]] = p.batchnorm.dst_desc();
        if (!topology_.runs_backward[l]) return;
        p.batchnorm_backward = create(layer.name, "batch_normalization_backward", [&] {
            return api::batch_normalization_backward(engine_, data, layer.eps, flags, plan_.attr,
                                                     p.batchnorm_training);
        });
    }

    void relu(int l) {
        const Layer& layer = graph_.layers[l];
        LayerPlan& p = plan_.layers[l];
        const md& data = plan_.values[layer.inputs[0]];
        p.relu = create(layer.name, "eltwise_forward (relu)",
                        [&] { return api::relu_forward(engine_, data, plan_.attr); });
        plan_.values[layer.output] = p.relu.dst_desc();
        if (!topology_.runs_backward[l] || !topology_.has_gradient[layer.inputs[0]]) return;
        p.relu_backward = create(layer.name, "eltwise_backward (relu)", [&] {
            return api::relu_backward(engine_, data, plan_.attr, p.relu);
        });
    }

    void pool(int l) {
        const Layer& layer = graph_.layers[l];
        LayerPlan& p = plan_.layers[l];
        const md& data = plan_.values[layer.inputs[0]];
        const md out = plain_ ? plain_value(layer.output) : any_desc(graph_.values[layer.output]);
        p.pool = create(layer.name, "pooling_forward (max)",
                        [&] { return api::max_pooling_forward(engine_, data, out, plan_.attr); });
        plan_.values[layer.output] = p.pool.dst_desc();
        if (!topology_.runs_backward[l] || !topology_.has_gradient[layer.inputs[0]]) return;
        p.pool_backward = create(layer.name, "pooling_backward (max)", [&] {
            return api::max_pooling_backward(engine_, data, p.pool.dst_desc(), plan_.attr, p.pool);
        });
    }

    void upsample(int l) {
        const Layer& layer = graph_.layers[l];
        LayerPlan& p = plan_.layers[l];
        const md& data = plan_.values[layer.inputs[0]];
        const md out = plain_ ? plain_value(layer.output) : any_desc(graph_.values[layer.output]);
        p.upsample = create(layer.name, "resampling_forward (nearest)",
                            [&] { return api::nearest_forward(engine_, data, out, plan_.attr); });
        plan_.values[layer.output] = p.upsample.dst_desc();
        if (!topology_.runs_backward[l] || !topology_.has_gradient[layer.inputs[0]]) return;
        p.upsample_backward = create(layer.name, "resampling_backward (nearest)", [&] {
            return api::nearest_backward(engine_, data, p.upsample.dst_desc(), plan_.attr,
                                         p.upsample);
        });
    }

    void add(int l) {
        const Layer& layer = graph_.layers[l];
        LayerPlan& p = plan_.layers[l];
        std::vector<md> sources;
        for (int v : layer.inputs) sources.push_back(plan_.values[v]);
        p.sum = create(layer.name, "sum",
                       [&] { return api::sum(engine_, sources[0], sources, plan_.attr); });
        plan_.values[layer.output] = p.sum.dst_desc();
    }

    const Graph& graph_;
    const Topology& topology_;
    const dnnl::engine& engine_;
    const bool plain_;
    Plan plan_;
};

}  // namespace

void throw_creation_error(const std::string& layer, const char* what, const dnnl::error& e) {
    throw hb::Error("layer '" + layer + "': oneDNN could not create " + what + ": " + e.what() +
                        " (status " + std::to_string(static_cast<int>(e.status)) + ")",
                    e.status == dnnl_out_of_memory ? HB_OUT_OF_MEMORY : HB_ERROR);
}

Plan make_plan(const Graph& graph, const Topology& topology, const dnnl::engine& engine,
               bool plain) {
    return Planner(graph, topology, engine, plain).run();
}

}  // namespace hb_onednn
