// The layer graph itself: looking layers up, the kinds' names, and its C view (AbiGraph).
#include "model/hourglass.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

using harness::model::AbiGraph;
using harness::model::build_hourglass;
using harness::model::Graph;
using harness::model::HourglassSpec;
using harness::model::LayerKind;
using harness::model::LossReduction;
using harness::model::Shape;
using harness::model::TensorRole;

TEST(Graph, LookupAndKindNames) {
    HourglassSpec spec;
    spec.stacks = 1;
    const Graph g = build_hourglass(spec);
    EXPECT_THROW(g.layer("no.such.layer"), std::out_of_range);
    EXPECT_EQ(g.index_of_layer("no.such.layer"), -1);
    EXPECT_STREQ(to_string(LayerKind::conv2d), "conv2d");
    EXPECT_STREQ(to_string(LayerKind::batchnorm), "batchnorm");
    EXPECT_STREQ(to_string(LayerKind::relu), "relu");
    EXPECT_STREQ(to_string(LayerKind::maxpool2d), "maxpool2d");
    EXPECT_STREQ(to_string(LayerKind::upsample), "upsample");
    EXPECT_STREQ(to_string(LayerKind::add), "add");
    EXPECT_STREQ(to_string(LayerKind::mse_loss), "mse_loss");
}

TEST(AbiGraph, MirrorsTheGraph) {
    HourglassSpec spec;
    spec.stacks = 2;
    const Graph g = build_hourglass(spec);
    AbiGraph built(g);
    const AbiGraph abi = std::move(built);  // the view survives a move
    const hb_graph& h = *abi.get();
    ASSERT_EQ(h.num_values, static_cast<int32_t>(g.values.size()));
    ASSERT_EQ(h.num_layers, static_cast<int32_t>(g.layers.size()));
    ASSERT_EQ(h.num_tensors, static_cast<int32_t>(g.tensors.size()));
    EXPECT_EQ(h.input, g.input);
    for (size_t d = 0; d < 4; ++d) EXPECT_EQ(h.target_shape[d], g.target_shape[d]);

    for (size_t i = 0; i < g.values.size(); ++i) {
        EXPECT_STREQ(h.values[i].name, g.values[i].name.c_str());
        for (size_t d = 0; d < 4; ++d) EXPECT_EQ(h.values[i].shape[d], g.values[i].shape[d]);
    }
    for (size_t i = 0; i < g.tensors.size(); ++i) {
        const auto& t = g.tensors[i];
        const hb_tensor& ht = h.tensors[i];
        EXPECT_STREQ(ht.name, t.name.c_str());
        EXPECT_EQ(ht.layer, t.layer);
        EXPECT_EQ(ht.role, static_cast<hb_tensor_role>(t.role));
        ASSERT_EQ(ht.rank, static_cast<int32_t>(t.shape.size()));
        for (size_t d = 0; d < t.shape.size(); ++d) EXPECT_EQ(ht.shape[d], t.shape[d]);
        EXPECT_EQ(ht.trainable, t.trainable() ? 1 : 0);
    }
    for (size_t i = 0; i < g.layers.size(); ++i) {
        const auto& l = g.layers[i];
        const hb_layer& hl = h.layers[i];
        EXPECT_STREQ(hl.name, l.name.c_str());
        EXPECT_STREQ(to_string(l.kind), to_string(static_cast<LayerKind>(hl.kind)));
        ASSERT_EQ(hl.num_inputs, static_cast<int32_t>(l.inputs.size()));
        for (size_t k = 0; k < l.inputs.size(); ++k) EXPECT_EQ(hl.inputs[k], l.inputs[k]);
        EXPECT_EQ(hl.output, l.output);
        EXPECT_EQ(hl.in_channels, l.in_channels);
        EXPECT_EQ(hl.out_channels, l.out_channels);
        EXPECT_EQ(hl.kernel, l.kernel);
        EXPECT_EQ(hl.stride, l.stride);
        EXPECT_EQ(hl.padding, l.padding);
        EXPECT_EQ(hl.weight, l.weight);
        EXPECT_EQ(hl.bias, l.bias);
        EXPECT_EQ(hl.running_mean, l.running_mean);
        EXPECT_EQ(hl.running_var, l.running_var);
        EXPECT_EQ(hl.momentum, l.momentum);
        EXPECT_EQ(hl.eps, l.eps);
        EXPECT_EQ(hl.loss_weight, l.loss_weight);
    }
    EXPECT_EQ(h.layers[0].kind, HB_LAYER_CONV2D);
    EXPECT_EQ(h.layers[1].kind, HB_LAYER_BATCHNORM);
    EXPECT_EQ(h.layers[g.layer("stack0.loss").output - 1].kind, HB_LAYER_MSE_LOSS);
    EXPECT_EQ(h.tensors[5].role, HB_ROLE_RUNNING_VAR);
}
