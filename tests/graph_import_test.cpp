// The SDK's graph import (include/hb/graph.hpp): a valid graph arrives whole, and each kind of
// broken graph is refused with a message naming what is wrong; the structure every backend reads
// from it (uses of each value, the batch norms a ReLU alone reads).
#include "hb/graph.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace {

// input [2,3,8,8] -> conv (4 filters, 3x3, pad 1) -> relu -> loss against a [2,4,8,8] target.
struct SmallGraph {
    std::vector<hb_value> values = {{"input", {2, 3, 8, 8}},
                                    {"conv", {2, 4, 8, 8}},
                                    {"relu", {2, 4, 8, 8}},
                                    {"loss", {1, 1, 1, 1}}};
    std::vector<hb_tensor> tensors = {{"conv.weight", 0, HB_ROLE_WEIGHT, 4, {4, 3, 3, 3}, 1},
                                      {"conv.bias", 0, HB_ROLE_BIAS, 1, {4, 0, 0, 0}, 1}};
    std::vector<int32_t> conv_in = {0}, relu_in = {1}, loss_in = {2};
    std::vector<hb_layer> layers;
    hb_graph graph = hb_empty_graph();

    SmallGraph() {
        hb_layer conv{};
        conv.name = "conv";
        conv.kind = HB_LAYER_CONV2D;
        conv.num_inputs = 1;
        conv.inputs = conv_in.data();
        conv.output = 1;
        conv.in_channels = 3;
        conv.out_channels = 4;
        conv.kernel = 3;
        conv.stride = 1;
        conv.padding = 1;
        conv.weight = 0;
        conv.bias = 1;
        conv.running_mean = conv.running_var = -1;
        hb_layer relu = conv;
        relu.name = "relu";
        relu.kind = HB_LAYER_RELU;
        relu.inputs = relu_in.data();
        relu.output = 2;
        relu.weight = relu.bias = -1;
        hb_layer loss = relu;
        loss.name = "loss";
        loss.kind = HB_LAYER_MSE_LOSS;
        loss.inputs = loss_in.data();
        loss.output = 3;
        loss.loss_weight = 0.5f;
        layers = {conv, relu, loss};
    }

    const hb_graph& get() {
        graph.num_values = static_cast<int32_t>(values.size());
        graph.values = values.data();
        graph.num_layers = static_cast<int32_t>(layers.size());
        graph.layers = layers.data();
        graph.num_tensors = static_cast<int32_t>(tensors.size());
        graph.tensors = tensors.data();
        graph.input = 0;
        const int64_t target[4] = {2, 4, 8, 8};
        for (int k = 0; k < 4; ++k) graph.target_shape[k] = target[k];
        return graph;
    }
};

const hb::ImportRules kRules{"test", false};

// The import's error message, or "" when it succeeds; `status` gets the error's status.
std::string refusal(const hb_graph& graph, hb_status* status = nullptr,
                    const hb::ImportRules& rules = kRules) {
    try {
        hb::import_graph(graph, rules);
        return "";
    } catch (const hb::Error& e) {
        if (status) *status = e.status();
        return e.what();
    }
}

TEST(GraphImport, AValidGraphArrivesWhole) {
    SmallGraph g;
    const hb::Graph graph = hb::import_graph(g.get(), kRules);
    ASSERT_EQ(graph.num_layers(), 3);
    EXPECT_EQ(graph.values[1], (hb::Dims{2, 4, 8, 8}));
    EXPECT_EQ(graph.layers[0].kernel, 3);
    EXPECT_EQ(graph.layers[0].bias, 1);
    EXPECT_EQ(graph.layers[2].loss_weight, 0.5);
    EXPECT_EQ(graph.tensors[0].elements, 4 * 3 * 3 * 3);
    EXPECT_TRUE(graph.tensors[1].trainable);
}

// A harness of a later minor version may hand over larger elements, with fields appended that
// this SDK does not know: the import steps by the graph's sizes and reads the fields it knows.
TEST(GraphImport, ElementsOfALaterMinorVersionAreReadByTheirSizes) {
    SmallGraph g;
    struct LaterLayer {
        hb_layer known;
        int32_t dilation;  // a field a later minor version appended
    };
    std::vector<LaterLayer> later;
    for (const hb_layer& l : g.layers) later.push_back({l, 1});
    hb_graph graph = g.get();
    graph.layers = &later[0].known;
    graph.layer_size = sizeof(LaterLayer);
    const hb::Graph imported = hb::import_graph(graph, kRules);
    ASSERT_EQ(imported.num_layers(), 3);
    EXPECT_EQ(imported.layers[0].kernel, 3);
    EXPECT_EQ(imported.layers[2].kind, HB_LAYER_MSE_LOSS);
    EXPECT_EQ(imported.layers[2].loss_weight, 0.5);
}

// A graph from a harness of ABI 1 (no sizes) or with elements smaller than ABI 2.0's is refused.
TEST(GraphImport, AGraphSmallerThanThisMajorVersionsIsRefused) {
    SmallGraph g;
    hb_graph graph = g.get();
    graph.layer_size = static_cast<uint32_t>(hb::GraphSizes::layer - 4);
    EXPECT_NE(refusal(graph).find("smaller than ABI 2.0's"), std::string::npos) << refusal(graph);
    graph.struct_size = graph.value_size = graph.tensor_size = graph.layer_size = 0;
    EXPECT_NE(refusal(graph).find("not a graph of this ABI"), std::string::npos);
}

TEST(GraphImport, BrokenGraphsAreRefusedNamingWhatIsWrong) {
    {
        SmallGraph g;
        g.relu_in[0] = 2;  // its own output
        EXPECT_NE(refusal(g.get()).find("'relu' (relu): input 'relu' is not computed before"),
                  std::string::npos);
    }
    {
        SmallGraph g;
        g.conv_in[0] = 9;
        EXPECT_NE(refusal(g.get()).find("input value index 9 is out of range"), std::string::npos);
    }
    {
        SmallGraph g;
        g.tensors[0].shape[1] = 2;
        EXPECT_NE(refusal(g.get()).find("weight 'conv.weight' has shape [4, 2, 3, 3], expected "
                                        "[4, 3, 3, 3]"),
                  std::string::npos);
    }
    {
        SmallGraph g;
        g.values[2].shape[2] = 4;
        EXPECT_NE(refusal(g.get()).find("output shape [2, 4, 4, 8], expected [2, 4, 8, 8]"),
                  std::string::npos);
    }
    {
        SmallGraph g;
        g.layers[1].output = 1;  // computed twice
        EXPECT_NE(refusal(g.get()).find("is already computed by an earlier layer"),
                  std::string::npos);
    }
    {
        SmallGraph g;
        g.tensors[1].trainable = 0;
        EXPECT_NE(refusal(g.get()).find("bias 'conv.bias' must be trainable"), std::string::npos);
    }
    {
        SmallGraph g;
        g.values[1].shape[0] = 0;
        EXPECT_NE(refusal(g.get()).find("graph: value 'conv' has shape [0, 4, 8, 8]"),
                  std::string::npos);
    }
}

TEST(GraphImport, UnknownKindsAndSharedTensorsAreUnsupportedUnlessAllowed) {
    SmallGraph unknown;
    unknown.layers[1].kind = static_cast<hb_layer_kind>(7);  // a kind from a newer harness
    hb_status status = HB_OK;
    EXPECT_NE(refusal(unknown.get(), &status).find("kind 7 is not supported by the test backend"),
              std::string::npos);
    EXPECT_EQ(status, HB_UNSUPPORTED);

    SmallGraph shared;
    shared.values[0].shape[1] = 4;     // a 4-channel input, so that one [4, 4, 3, 3] weight
    shared.layers[0].in_channels = 4;  // serves two convolutions
    shared.tensors[0].shape[1] = 4;
    shared.layers[1] = shared.layers[0];  // conv2 on conv's output, with conv's tensors
    shared.layers[1].name = "conv2";
    shared.layers[1].inputs = shared.relu_in.data();
    shared.layers[1].output = 2;
    status = HB_OK;
    EXPECT_NE(
        refusal(shared.get(), &status).find("tensor 'conv.weight' is already used by layer 'conv'"),
        std::string::npos);
    EXPECT_EQ(status, HB_UNSUPPORTED);
    EXPECT_EQ(refusal(shared.get(), nullptr, {"test", true}), "");
}

}  // namespace

namespace {

hb::Layer layer(hb_layer_kind kind, std::vector<int> inputs, int output) {
    hb::Layer l;
    l.kind = kind;
    l.inputs = std::move(inputs);
    l.output = output;
    return l;
}

// bn0 -> relu1 (fusable); bn2 -> relu3 and add4 (not: the ReLU is not its only reader);
// bn5 -> add6 (not: no ReLU).
TEST(GraphStructure, UsesAndTheBatchNormsAReluAloneReads) {
    hb::Graph g;
    g.values.resize(9);
    g.layers = {layer(HB_LAYER_BATCHNORM, {0}, 1), layer(HB_LAYER_RELU, {1}, 2),
                layer(HB_LAYER_BATCHNORM, {2}, 3), layer(HB_LAYER_RELU, {3}, 4),
                layer(HB_LAYER_ADD, {3, 4}, 5),    layer(HB_LAYER_BATCHNORM, {5}, 6),
                layer(HB_LAYER_ADD, {6, 2}, 7)};
    const auto uses = hb::uses_of(g);
    ASSERT_EQ(uses[3].size(), 2u);
    EXPECT_EQ(uses[3][1].layer, 4);
    EXPECT_EQ(uses[3][1].slot, 0);
    EXPECT_EQ(uses[2].size(), 2u);  // bn2 and the last add, in execution order
    EXPECT_EQ(uses[2][1].slot, 1);
    EXPECT_TRUE(uses[7].empty());
    const auto pairs = hb::batchnorm_relu_pairs(g, uses);
    ASSERT_EQ(pairs.size(), 1u);
    EXPECT_EQ(pairs[0], std::make_pair(0, 1));
}

}  // namespace
