#include "model/layer_units.hpp"
#include "model/hourglass.hpp"

#include "hb/graph.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

using harness::model::AbiGraph;
using harness::model::build_hourglass;
using harness::model::Graph;
using harness::model::HourglassSpec;
using harness::model::layer_units;
using harness::model::LayerKind;
using harness::model::LayerUnit;
using harness::model::unit_graph;

namespace {

Graph hourglass2() {
    HourglassSpec s;
    s.stacks = 2;
    return build_hourglass(s);
}

const LayerUnit& unit_named(const std::vector<LayerUnit>& units, const std::string& name) {
    for (const LayerUnit& u : units)
        if (u.name == name) return u;
    throw std::out_of_range("no unit " + name);
}

TEST(LayerUnits, EveryLayerOfTheModelIsInExactlyOneUnitOccurrence) {
    const Graph model = hourglass2();
    const auto units = layer_units(model);
    size_t layers = 0;
    std::set<std::string> names;
    for (const LayerUnit& u : units) {
        layers += u.layers.size() * static_cast<size_t>(u.count());
        EXPECT_TRUE(names.insert(u.name).second) << u.name;
    }
    EXPECT_EQ(layers, model.layers.size());
    EXPECT_LT(units.size(), model.layers.size() / 4) << "configurations repeat in an hourglass";
}

TEST(LayerUnits, CountsAndFlopsAddUpToTheModel) {
    const Graph model = hourglass2();
    int64_t flops = 0;
    for (const LayerUnit& u : layer_units(model)) flops += u.count() * u.training_flops;
    EXPECT_EQ(flops, model.training_flops_per_step());
}

TEST(LayerUnits, BatchNormsAndTheirReluAreOneUnitAndConfigurationsAreNamedByShape) {
    const auto units = layer_units(hourglass2());
    const LayerUnit& bn = unit_named(units, "batchnorm+relu/c256/64x64");
    EXPECT_EQ(bn.kind, "batchnorm+relu");
    EXPECT_EQ(bn.layers.size(), 2u);
    const LayerUnit& stem = unit_named(units, "conv7x7/s2/c3-64/256x256");
    EXPECT_TRUE(stem.reads_model_input);
    EXPECT_EQ(stem.count(), 1);
    EXPECT_EQ(stem.occurrences.front(), "pre.conv");
    const LayerUnit& merge = unit_named(units, "add3/c256/64x64");
    EXPECT_EQ(merge.kind, "add");
    EXPECT_EQ(merge.count(), 1);  // stack0.merge; the last stack has none
    EXPECT_EQ(unit_named(units, "mse_loss/c16/64x64").count(), 2);
    EXPECT_EQ(unit_named(units, "maxpool2d/c256/64x64").count(), 2);
}

TEST(LayerUnits, EachUnitGraphIsAValidTrainingGraphWithAProbePerInput) {
    const Graph model = hourglass2();
    for (const LayerUnit& u : layer_units(model)) {
        SCOPED_TRACE(u.name);
        const Graph g = unit_graph(model, u);
        const AbiGraph abi(g);
        const hb::Graph imported = hb::import_graph(*abi.get(), {"test", false});
        const auto& first = model.layers[static_cast<size_t>(u.layers.front())];
        const size_t probes = u.reads_model_input ? 0 : first.inputs.size();
        ASSERT_EQ(g.layers.size(), probes + u.layers.size() + (u.kind == "mse_loss" ? 0 : 1));
        for (size_t k = 0; k < probes; ++k) {
            EXPECT_EQ(g.layers[k].name, "probe" + std::to_string(k));
            EXPECT_EQ(g.layers[k].kernel, 1);
            EXPECT_EQ(g.layers[k].inputs, std::vector<int>{g.input});
        }
        EXPECT_EQ(g.layers[probes].name, first.name);
        EXPECT_EQ(g.layers.back().kind, LayerKind::mse_loss);
        EXPECT_EQ(g.values[static_cast<size_t>(g.input)].shape,
                  model.values[static_cast<size_t>(first.inputs[0])].shape);
        for (const auto& t : g.tensors)
            EXPECT_TRUE(t.name.rfind("probe", 0) == 0 ||
                        model.index_of_layer(t.name.substr(0, t.name.rfind('.'))) >= 0)
                << t.name;
    }
}

}  // namespace
