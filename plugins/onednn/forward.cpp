// The forward operations of one layer: its primitive with its buffers, the batch statistics and
// running statistics of batch norm, the MSE loss.
#include "kernels.hpp"
#include "layout.hpp"
#include "training_step.hpp"

namespace hb_onednn {
void TrainingStep::build_forward(int l) {
    const Layer& layer = graph_.layers[l];
    const LayerPlan& p = plan_.layers[l];
    const int x = layer.inputs[0];
    const int written = p.writes_into >= 0 ? p.writes_into : topology_.output[l];
    const Ref out = layer.kind == HB_LAYER_MSE_LOSS ? Ref{} : value_ref(written);
    const std::string& name = layer.name;
    const int threads = settings_.threads;

    switch (layer.kind) {
        case HB_LAYER_CONV2D: {
            Ref source = value_ref(x);
            if (p.reorder_source) {
                const Ref derived{p.source, derived_block_[l], {}};
                forward_ops_.push_back(reorder_op(l, source, derived, false));
                ++forward_reorders_;
                source = derived;
            }
            // The add this convolution writes into starts from its other inputs: their sum is
            // the add's forward pass, which the convolutions absorbed; one input is a plain copy,
            // a reorder (docs/design.md §3).
            if (!p.initial.empty()) {
                if (p.initial_sum) {
                    std::vector<std::pair<int, Ref>> refs = {{DNNL_ARG_DST, out}};
                    for (size_t k = 0; k < p.initial.size(); ++k)
                        refs.push_back(
                            {DNNL_ARG_MULTIPLE_SRC + static_cast<int>(k), value_ref(p.initial[k])});
                    forward_ops_.push_back(primitive_op(
                        l, "sum", HB_PHASE_FORWARD, p.initial_sum,
                        make_primitive<dnnl::sum>(name, "sum", p.initial_sum), std::move(refs)));
                } else {
                    const Ref from = value_ref(p.initial[0]);
                    forward_ops_.push_back(host_op(l, "add input copy", HB_PHASE_REORDER, [=] {
                        copy(floats_of(out.md), data(out), data(from), threads);
                    }));
                }
            }
            // In the plain layout the output is written in the primitive's layout, then
            // reordered into the value's (no convolution writes into an add's output then).
            const Ref destination =
                p.reorder_destination
                    ? Ref{p.destination,
                          add_block(p.destination, forward_step(l), forward_step(l)),
                          {}}
                    : out;
            std::vector<std::pair<int, Ref>> refs = {{DNNL_ARG_SRC, source},
                                                     {DNNL_ARG_WEIGHTS, working_ref(layer.weight)},
                                                     {DNNL_ARG_DST, destination}};
            if (layer.bias >= 0) refs.push_back({DNNL_ARG_BIAS, tensor_ref(layer.bias)});
            forward_ops_.push_back(primitive_op(
                l, "convolution_forward", HB_PHASE_FORWARD, p.conv,
                make_primitive<dnnl::convolution_forward>(name, "convolution_forward", p.conv),
                std::move(refs)));
            if (p.reorder_destination) {
                forward_ops_.push_back(reorder_op(l, destination, out, false));
                ++forward_reorders_;
            }
            break;
        }
        case HB_LAYER_BATCHNORM: {
            if (means_.size() != graph_.layers.size()) {
                means_.resize(graph_.layers.size());
                variances_.resize(graph_.layers.size());
            }
            means_[l] = create(name, "batch statistics memory",
                               [&] { return dnnl::memory(p.batchnorm.mean_desc(), engine_); });
            variances_[l] = create(name, "batch statistics memory", [&] {
                return dnnl::memory(p.batchnorm.variance_desc(), engine_);
            });
            owned_bytes_ += 2 * p.batchnorm.mean_desc().get_size();
            const Dims& d = graph_.values[x];
            if (p.statistics_block != 0) {
                const Ref source = value_ref(x), mean = fixed(means_[l]);
                const Ref variance = fixed(variances_[l]);
                const int block = p.statistics_block;
                forward_ops_.push_back(host_op(l, "batch statistics", HB_PHASE_FORWARD, [=] {
                    batch_statistics(d.n, d.c, d.h * d.w, block, data(source), data(mean),
                                     data(variance), threads);
                }));
            }
            std::vector<std::pair<int, Ref>> refs = {{DNNL_ARG_SRC, value_ref(x)},
                                                     {DNNL_ARG_DST, out},
                                                     {DNNL_ARG_MEAN, fixed(means_[l])},
                                                     {DNNL_ARG_VARIANCE, fixed(variances_[l])}};
            if (layer.weight >= 0) refs.push_back({DNNL_ARG_SCALE, tensor_ref(layer.weight)});
            if (layer.bias >= 0) refs.push_back({DNNL_ARG_SHIFT, tensor_ref(layer.bias)});
            if (workspace_block_[l] >= 0)
                refs.push_back({DNNL_ARG_WORKSPACE,
                                Ref{p.batchnorm.workspace_desc(), workspace_block_[l], {}}});
            forward_ops_.push_back(
                primitive_op(l, "batch_normalization_forward", HB_PHASE_FORWARD, p.batchnorm,
                             make_primitive<dnnl::batch_normalization_forward>(
                                 name, "batch_normalization_forward", p.batchnorm),
                             std::move(refs)));
            if (layer.running_mean < 0 && layer.running_var < 0) break;
            // oneDNN does not keep running statistics.
            const double count = static_cast<double>(d.n * d.h * d.w);
            const Ref rm = layer.running_mean >= 0 ? tensor_ref(layer.running_mean) : Ref{};
            const Ref rv = layer.running_var >= 0 ? tensor_ref(layer.running_var) : Ref{};
            const Ref mean = fixed(means_[l]), variance = fixed(variances_[l]);
            const double momentum = layer.momentum;
            const int64_t channels = d.c;
            const bool has_mean = layer.running_mean >= 0, has_var = layer.running_var >= 0;
            forward_ops_.push_back(host_op(l, "running statistics", HB_PHASE_FORWARD, [=] {
                update_running_statistics(channels, data(mean), data(variance), momentum, count,
                                          has_mean ? data(rm) : nullptr,
                                          has_var ? data(rv) : nullptr);
            }));
            break;
        }
        case HB_LAYER_RELU:
            forward_ops_.push_back(
                primitive_op(l, "eltwise_forward", HB_PHASE_FORWARD, p.relu,
                             make_primitive<dnnl::eltwise_forward>(name, "eltwise_forward", p.relu),
                             {{DNNL_ARG_SRC, value_ref(x)}, {DNNL_ARG_DST, out}}));
            break;
        case HB_LAYER_MAXPOOL2D: {
            if (const int block = native_block(l)) {
                const Dims& d = graph_.values[x];
                const int64_t planes = floats_of(plan_.values[x]) / (d.h * d.w * block);
                const Ref source = value_ref(x);
                const Ref argmax{native_workspace(l), workspace_block_[l], {}};
                note_impl("pooling_forward", "native:2x2");
                forward_ops_.push_back(host_op(l, "pooling_forward", HB_PHASE_FORWARD, [=] {
                    max_pool_2x2_forward(planes, d.h, d.w, block, data(source), data(out),
                                         reinterpret_cast<uint8_t*>(data(argmax)), threads);
                }));
                break;
            }
            std::vector<std::pair<int, Ref>> refs = {{DNNL_ARG_SRC, value_ref(x)},
                                                     {DNNL_ARG_DST, out}};
            if (workspace_block_[l] >= 0)
                refs.push_back(
                    {DNNL_ARG_WORKSPACE, Ref{p.pool.workspace_desc(), workspace_block_[l], {}}});
            forward_ops_.push_back(
                primitive_op(l, "pooling_forward", HB_PHASE_FORWARD, p.pool,
                             make_primitive<dnnl::pooling_forward>(name, "pooling_forward", p.pool),
                             std::move(refs)));
            break;
        }
        case HB_LAYER_UPSAMPLE:
            forward_ops_.push_back(primitive_op(
                l, "resampling_forward", HB_PHASE_FORWARD, p.upsample,
                make_primitive<dnnl::resampling_forward>(name, "resampling_forward", p.upsample),
                {{DNNL_ARG_SRC, value_ref(x)}, {DNNL_ARG_DST, out}}));
            break;
        case HB_LAYER_ADD: {
            if (p.computed_by_convolutions) break;
            std::vector<std::pair<int, Ref>> refs = {{DNNL_ARG_DST, out}};
            for (size_t k = 0; k < layer.inputs.size(); ++k)
                refs.push_back(
                    {DNNL_ARG_MULTIPLE_SRC + static_cast<int>(k), value_ref(layer.inputs[k])});
            forward_ops_.push_back(primitive_op(l, "sum", HB_PHASE_FORWARD, p.sum,
                                                make_primitive<dnnl::sum>(name, "sum", p.sum),
                                                std::move(refs)));
            break;
        }
        case HB_LAYER_MSE_LOSS: {
            const dnnl::memory::desc& md = plan_.values[x];
            int k = 0;
            while (k < static_cast<int>(target_layouts_.size()) && target_layouts_[k].md != md) ++k;
            if (k == static_cast<int>(target_layouts_.size())) {
                target_layouts_.push_back(
                    {md, has_padding(md) ? element_mask(md) : std::vector<uint8_t>{}});
                current_targets_.push_back(nullptr);
            }
            const size_t index = losses_.size();
            losses_.push_back({l, k, 0.0});
            const Ref y = value_ref(x);
            const int64_t floats = floats_of(md);
            const double scale =
                layer.loss_weight / static_cast<double>(graph_.values[x].elements());
            forward_ops_.push_back(host_op(l, "mse loss", HB_PHASE_FORWARD, [=] {
                const std::vector<uint8_t>& mask = target_layouts_[k].mask;
                losses_[index].loss =
                    scale * squared_error(floats, data(y), current_targets_[k],
                                          mask.empty() ? nullptr : mask.data(), threads);
            }));
            break;
        }
    }
}

}  // namespace hb_onednn
