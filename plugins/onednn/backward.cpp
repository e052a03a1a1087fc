// The backward operations of one layer, and the delivery of its input gradients.
#include "kernels.hpp"
#include "layout.hpp"
#include "training_step.hpp"

#include <algorithm>

namespace hb_onednn {
void TrainingStep::build_backward(int l) {
    const Layer& layer = graph_.layers[l];
    const LayerPlan& p = plan_.layers[l];
    const int x = layer.inputs[0];
    const std::string& name = layer.name;
    const int threads = settings_.threads;
    const std::vector<Contribution>& contributions = gradients_.contributions[l];
    const Contribution* first = contributions.empty() ? nullptr : &contributions[0];
    const Ref gout = layer.kind == HB_LAYER_MSE_LOSS ? Ref{} : gradient_ref(topology_.output[l]);
    std::vector<Op> then;

    switch (layer.kind) {
        case HB_LAYER_CONV2D: {
            // The output's gradient in the primitives' layout (the plain layout's reorder).
            Ref dy = gout;
            if (p.reorder_destination) {
                dy = temporary(p.destination, l);
                backward_ops_.push_back(reorder_op(l, gout, dy, false));
                ++backward_reorders_;
            }
            if (p.conv_data) {
                const TensorPlan& w = plan_.tensors[layer.weight];
                Ref weights = working_ref(layer.weight);
                if (w.backward_data != weights.md) {
                    const Ref transposed = temporary(w.backward_data, l);
                    backward_ops_.push_back(reorder_op(l, weights, transposed, false));
                    ++backward_reorders_;
                    weights = transposed;
                }
                const Ref dx = gradient_destination(first, p.source, l, then);
                backward_ops_.push_back(primitive_op(
                    l, "convolution_backward_data", HB_PHASE_BACKWARD_DATA, p.conv_data,
                    make_primitive<dnnl::convolution_backward_data>(
                        name, "convolution_backward_data", p.conv_data),
                    {{DNNL_ARG_DIFF_DST, dy},
                     {DNNL_ARG_WEIGHTS, weights},
                     {DNNL_ARG_DIFF_SRC, dx}}));
            }
            const Ref source =
                p.reorder_source ? Ref{p.source, derived_block_[l], {}} : value_ref(x);
            const TensorPlan& w = plan_.tensors[layer.weight];
            Ref dw = tensor_gradient_ref(layer.weight, l);
            std::vector<Op> after_weights;
            if (w.gradient != dw.md) {
                const Ref produced = temporary(w.gradient, l);
                after_weights.push_back(reorder_op(l, produced, dw, false));
                ++backward_reorders_;
                dw = produced;
            }
            std::vector<std::pair<int, Ref>> refs = {
                {DNNL_ARG_SRC, source}, {DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_DIFF_WEIGHTS, dw}};
            if (layer.bias >= 0)
                refs.push_back({DNNL_ARG_DIFF_BIAS, tensor_gradient_ref(layer.bias, l)});
            backward_ops_.push_back(primitive_op(
                l, "convolution_backward_weights", HB_PHASE_BACKWARD_WEIGHTS, p.conv_weights,
                make_primitive<dnnl::convolution_backward_weights>(
                    name, "convolution_backward_weights", p.conv_weights),
                std::move(refs)));
            for (Op& op : after_weights) backward_ops_.push_back(std::move(op));
            break;
        }
        case HB_LAYER_BATCHNORM: {
            // With gamma or beta, one primitive yields their gradients with the input's.
            const hb_phase batchnorm_phase =
                layer.weight >= 0 || layer.bias >= 0 ? HB_PHASE_BACKWARD : HB_PHASE_BACKWARD_DATA;
            const Ref dx = gradient_destination(first, plan_.values[x], l, then);
            std::vector<std::pair<int, Ref>> refs = {{DNNL_ARG_SRC, value_ref(x)},
                                                     {DNNL_ARG_MEAN, fixed(means_[l])},
                                                     {DNNL_ARG_VARIANCE, fixed(variances_[l])},
                                                     {DNNL_ARG_DIFF_DST, gout},
                                                     {DNNL_ARG_DIFF_SRC, dx}};
            if (layer.weight >= 0) {
                refs.push_back({DNNL_ARG_SCALE, tensor_ref(layer.weight)});
                refs.push_back({DNNL_ARG_DIFF_SCALE, tensor_gradient_ref(layer.weight, l)});
            }
            if (layer.bias >= 0) {
                // oneDNN 2.x counts the shift among the backward pass's inputs; 3.x refuses it.
#if DNNL_VERSION_MAJOR < 3
                refs.push_back({DNNL_ARG_SHIFT, tensor_ref(layer.bias)});
#endif
                refs.push_back({DNNL_ARG_DIFF_SHIFT, tensor_gradient_ref(layer.bias, l)});
            }
            if (workspace_block_[l] >= 0)
                refs.push_back({DNNL_ARG_WORKSPACE,
                                Ref{p.batchnorm.workspace_desc(), workspace_block_[l], {}}});
            backward_ops_.push_back(primitive_op(
                l, "batch_normalization_backward", batchnorm_phase, p.batchnorm_backward,
                make_primitive<dnnl::batch_normalization_backward>(
                    name, "batch_normalization_backward", p.batchnorm_backward),
                std::move(refs)));
            break;
        }
        case HB_LAYER_RELU:
            if (!p.relu_backward) break;
            backward_ops_.push_back(primitive_op(
                l, "eltwise_backward", HB_PHASE_BACKWARD_DATA, p.relu_backward,
                make_primitive<dnnl::eltwise_backward>(name, "eltwise_backward", p.relu_backward),
                {{DNNL_ARG_SRC, value_ref(x)},
                 {DNNL_ARG_DIFF_DST, gout},
                 {DNNL_ARG_DIFF_SRC, gradient_destination(first, plan_.values[x], l, then)}}));
            break;
        case HB_LAYER_MAXPOOL2D: {
            if (!p.pool_backward) break;
            if (const int block = native_block(l)) {
                const Dims& d = graph_.values[x];
                const int64_t planes = floats_of(plan_.values[x]) / (d.h * d.w * block);
                const Ref argmax{native_workspace(l), workspace_block_[l], {}};
                const Ref dx = gradient_destination(first, plan_.values[x], l, then);
                note_impl("pooling_backward", "native:2x2");
                backward_ops_.push_back(host_op(l, "pooling_backward", HB_PHASE_BACKWARD_DATA, [=] {
                    max_pool_2x2_backward(planes, d.h, d.w, block, data(gout),
                                          reinterpret_cast<const uint8_t*>(data(argmax)), data(dx),
                                          threads);
                }));
                break;
            }
            std::vector<std::pair<int, Ref>> refs = {
                {DNNL_ARG_DIFF_DST, gout},
                {DNNL_ARG_DIFF_SRC, gradient_destination(first, plan_.values[x], l, then)}};
            if (workspace_block_[l] >= 0)
                refs.push_back(
                    {DNNL_ARG_WORKSPACE, Ref{p.pool.workspace_desc(), workspace_block_[l], {}}});
            backward_ops_.push_back(primitive_op(
                l, "pooling_backward", HB_PHASE_BACKWARD_DATA, p.pool_backward,
                make_primitive<dnnl::pooling_backward>(name, "pooling_backward", p.pool_backward),
                std::move(refs)));
            break;
        }
        case HB_LAYER_UPSAMPLE:
            if (!p.upsample_backward) break;
            if (const int block = native_block(l)) {
                const Dims& d = graph_.values[layer.output];
                const int64_t planes = floats_of(plan_.values[x]) / (d.h / 2 * (d.w / 2) * block);
                const Ref dx = gradient_destination(first, plan_.values[x], l, then);
                note_impl("resampling_backward", "native:2x");
                backward_ops_.push_back(
                    host_op(l, "resampling_backward", HB_PHASE_BACKWARD_DATA, [=] {
                        upsample_2x_backward(planes, d.h, d.w, block, data(gout), data(dx),
                                             threads);
                    }));
                break;
            }
            backward_ops_.push_back(primitive_op(
                l, "resampling_backward", HB_PHASE_BACKWARD_DATA, p.upsample_backward,
                make_primitive<dnnl::resampling_backward>(name, "resampling_backward",
                                                          p.upsample_backward),
                {{DNNL_ARG_DIFF_DST, gout},
                 {DNNL_ARG_DIFF_SRC, gradient_destination(first, plan_.values[x], l, then)}}));
            break;
        case HB_LAYER_ADD:
            for (const Contribution& c : contributions) {
                const Ref from = gradient_ref(c.from), to = gradient_ref(c.value);
                if (c.delivery == Delivery::share) continue;
                const bool accumulate = c.delivery == Delivery::add_from;
                if (from.md != to.md) {
                    backward_ops_.push_back(reorder_op(l, from, to, accumulate));
                    ++backward_reorders_;
                } else if (accumulate) {
                    // A plain copy is a reorder (docs/design.md §3), a sum the add's backward.
                    backward_ops_.push_back(host_op(
                        l, "gradient accumulation", HB_PHASE_BACKWARD_DATA,
                        [=] { add_into(floats_of(to.md), data(to), data(from), threads); }));
                } else {
                    backward_ops_.push_back(host_op(l, "gradient copy", HB_PHASE_REORDER, [=] {
                        copy(floats_of(to.md), data(to), data(from), threads);
                    }));
                }
            }
            break;
        case HB_LAYER_MSE_LOSS: {
            if (!first) break;
            const Ref y = value_ref(x), dy = gradient_ref(x);
            const auto loss = std::find_if(losses_.begin(), losses_.end(),
                                           [&](const LossLayer& e) { return e.layer == l; });
            const int k = loss->target_layout;
            const int64_t floats = floats_of(plan_.values[x]);
            const auto scale = static_cast<float>(2 * layer.loss_weight /
                                                  static_cast<double>(graph_.values[x].elements()));
            const bool accumulate = first->delivery == Delivery::accumulate;
            backward_ops_.push_back(host_op(l, "mse loss gradient", HB_PHASE_BACKWARD_DATA, [=] {
                const std::vector<uint8_t>& mask = target_layouts_[k].mask;
                squared_error_gradient(floats, data(y), current_targets_[k],
                                       mask.empty() ? nullptr : mask.data(), scale, data(dy),
                                       accumulate, threads);
            }));
            break;
        }
    }
    for (Op& op : then) backward_ops_.push_back(std::move(op));
}

}  // namespace hb_onednn
