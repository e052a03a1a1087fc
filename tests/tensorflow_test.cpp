// The tensorflow backend: its protobuf wire format, its timeline's rules and its layouts, here
// without TensorFlow; then the plugin itself through the harness, on every check config's
// tensorflow entries and with a profiled, traced run.
#include "harness_process.hpp"
#include "hb/cpu.hpp"
#include "kernels.hpp"
#include "layouts.hpp"
#include "output/record.hpp"
#include "output/run_json.hpp"
#include "test_paths.hpp"
#include "timeline.hpp"
#include "trace_check.hpp"
#include "wire.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace wire = hb_tensorflow::wire;
using harness::testing::run_harness;
using harness::testing::TempDir;

std::string hex(const std::string& bytes) {
    std::string out;
    const char* digits = "0123456789abcdef";
    for (unsigned char c : bytes) {
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out;
}

TEST(TensorflowWire, TheSessionConfigIsConfigProtosFields) {
    wire::SessionConfig c;
    c.intra_op_threads = 2;
    c.inter_op_threads = 1;
    // intra_op_parallelism_threads (2) = 2, inter_op_parallelism_threads (5) = 1.
    EXPECT_EQ(hex(wire::config_proto(c)), "10022801");
    c.xla = true;
    c.intra_op_threads = 300;  // a varint of two bytes
    // ... graph_options (10) { optimizer_options (3) { global_jit_level (5) = ON_2 } }.
    EXPECT_EQ(hex(wire::config_proto(c)), "10ac02280152041a022802");
    // RunOptions.trace_level (1) = SOFTWARE_TRACE (1).
    EXPECT_EQ(hex(wire::traced_run_options()), "0801");
}

TEST(TensorflowWire, StepStatsAreReadFromEveryDeviceWithNanosecondsPreferred) {
    auto node = [](const std::string& name, const std::string& label, int64_t start_us,
                   int64_t end_rel_us, int64_t start_ns, int64_t end_rel_ns) {
        wire::Writer n;
        n.text(1, name).varint(2, uint64_t(start_us)).varint(5, uint64_t(end_rel_us));
        n.text(8, label).varint(10, 7).varint(6, 99);  // field 6 (memory) is skipped
        if (start_ns) n.varint(13, uint64_t(start_ns)).varint(16, uint64_t(end_rel_ns));
        return n;
    };
    wire::Writer cpu, other, stats, metadata;
    cpu.text(1, "/job:localhost/replica:0/task:0/device:CPU:0")
        .message(2, node("pre.conv/conv", "pre.conv/conv = Conv2D(x, w)", 1000, 30, 0, 0))
        .message(2, node("gradients/pre.conv/conv_grad/Conv2DBackpropFilter",
                         "gradients/pre.conv/conv_grad/Conv2DBackpropFilter = "
                         "Conv2DBackpropFilter(a, b, c)",
                         1040, 20, 1040123, 20456));
    other.text(1, "other").message(2, node("_SOURCE", "_SOURCE = NoOp()", 999, 0, 0, 0));
    stats.message(1, cpu).message(1, other);
    metadata.message(1, stats).text(2, "cost graph, not read");
    const std::vector<wire::NodeStats> nodes = wire::read_step_stats(metadata.bytes());
    ASSERT_EQ(nodes.size(), 3u);
    EXPECT_EQ(nodes[0].node_name, "pre.conv/conv");
    EXPECT_EQ(nodes[0].thread_id, 7);
    EXPECT_EQ(nodes[0].start_ns, 1000000);
    EXPECT_EQ(nodes[0].end_ns, 1030000);
    EXPECT_EQ(nodes[1].start_ns, 1040123);
    EXPECT_EQ(nodes[1].end_ns, 1040123 + 20456);
    EXPECT_EQ(nodes[2].device, "other");
    EXPECT_EQ(wire::op_type_of_label(nodes[1].timeline_label), "Conv2DBackpropFilter");
    EXPECT_EQ(wire::op_type_of_label("no type here"), "");
}

TEST(TensorflowWire, BytesThatAreNoMessageAreRefused) {
    EXPECT_THROW(wire::read_fields(std::string("\x0a\x05" "ab", 4)), std::runtime_error);
    EXPECT_THROW(wire::read_fields(std::string("\x08\xff", 2)), std::runtime_error);
    EXPECT_THROW(wire::read_fields(std::string("\x0b", 1)), std::runtime_error);  // wire type 3
    EXPECT_THROW(wire::read_fields(std::string("\x00\x01", 2)), std::runtime_error);
    EXPECT_TRUE(wire::read_fields("").empty());
}

// A GraphDef's nodes are read with their inputs as written; a GraphDef of some of them keeps its
// other fields; a node's identity does not depend on the order of its attribute map.
TEST(TensorflowWire, AGraphsNodesAreReadFilteredAndMadeCanonical) {
    auto attr = [](const std::string& key, int64_t value) {
        return wire::Writer().text(1, key).message(2, wire::Writer().varint(3, uint64_t(value)));
    };
    // A node reading "a" three ways, with two attributes in the order given.
    auto add_n = [&](const wire::Writer& first, const wire::Writer& second) {
        return wire::Writer()
            .text(1, "gradients/b")
            .text(2, "AddN")
            .text(3, "a")
            .text(3, "a:1")
            .text(3, "^a")
            .message(5, first)
            .message(5, second);
    };
    const wire::Writer a = wire::Writer().text(1, "a").text(2, "Const");
    const wire::Writer b = add_n(attr("N", 2), attr("T", 1));
    const wire::Writer versions = wire::Writer().varint(1, 1882);
    const std::string graph =
        wire::Writer().message(1, a).message(1, b).message(4, versions).bytes();

    const std::vector<wire::GraphNode> nodes = wire::graph_nodes(graph);
    ASSERT_EQ(nodes.size(), 2u);
    EXPECT_EQ(nodes[0].name, "a");
    EXPECT_TRUE(nodes[0].inputs.empty());
    EXPECT_EQ(nodes[1].name, "gradients/b");
    EXPECT_EQ(nodes[1].inputs, (std::vector<std::string_view>{"a", "a:1", "^a"}));
    EXPECT_EQ(nodes[1].bytes, b.bytes());

    const std::string kept = wire::graph_with_nodes(graph, [](std::string_view name) {
        return name.substr(0, 10) == "gradients/";
    });
    EXPECT_EQ(kept, wire::Writer().message(1, b).message(4, versions).bytes());

    const wire::Writer reordered = add_n(attr("T", 1), attr("N", 2));
    EXPECT_NE(reordered.bytes(), b.bytes());
    EXPECT_EQ(wire::canonical_node(reordered.bytes()), wire::canonical_node(b.bytes()));
    const wire::Writer other = add_n(attr("T", 1), attr("N", 3));
    EXPECT_NE(wire::canonical_node(other.bytes()), wire::canonical_node(b.bytes()));
}

TEST(TensorflowTimeline, EachNodesPhaseComesFromItsPartOfTheGraphAndItsType) {
    using hb_tensorflow::classify;
    EXPECT_EQ(classify("pre.conv/conv", "Conv2D", 0).phase, HB_PHASE_FORWARD);
    EXPECT_EQ(classify("gradients/pre.conv/conv_grad/Conv2DBackpropInput", "Conv2DBackpropInput", 0)
                  .phase,
              HB_PHASE_BACKWARD_DATA);
    EXPECT_EQ(classify("gradients/x/g", "Conv2DBackpropFilter", 0).phase,
              HB_PHASE_BACKWARD_WEIGHTS);
    EXPECT_EQ(classify("gradients/x/g", "BiasAddGrad", 0).phase, HB_PHASE_BACKWARD_WEIGHTS);
    EXPECT_EQ(classify("gradients/x/g", "FusedBatchNormGradV3", 0).phase, HB_PHASE_BACKWARD);
    // oneDNN's kernels, under their prefixes, with the bias gradient fused into the filter's.
    EXPECT_EQ(classify("gradients/x/g", "_MklNativeConv2DBackpropFilterWithBias", 0).phase,
              HB_PHASE_BACKWARD_WEIGHTS);
    EXPECT_EQ(classify("gradients/x/g", "_MklConv2DBackpropInput", 0).phase,
              HB_PHASE_BACKWARD_DATA);
    EXPECT_EQ(classify("gradients/x/g", "_MklNativeFusedBatchNormGradV3", 0).phase,
              HB_PHASE_BACKWARD);
    EXPECT_EQ(classify("gradients/x/g", "ReluGrad", 3).phase, HB_PHASE_BACKWARD_DATA);
    EXPECT_EQ(classify("gradients/OnesLike", "OnesLike", -1).phase, HB_PHASE_LOSS);
    EXPECT_EQ(classify("update/pre.conv.weight", "ResourceApplyRMSProp", 0).phase,
              HB_PHASE_UPDATE);
    EXPECT_EQ(classify("loss/total", "AddN", -1).phase, HB_PHASE_LOSS);
    EXPECT_EQ(classify("data/input", "ResourceGather", -1).phase, HB_PHASE_REORDER);
    EXPECT_EQ(classify("_Retval", "_Retval", -1).phase, HB_PHASE_OTHER);
    EXPECT_TRUE(classify("_SOURCE", "NoOp", -1).skip);
    EXPECT_EQ(classify("x/y", "", 2).name, "x/y");
    EXPECT_EQ(hb_tensorflow::part_of("init/pre.conv.weight"), "setup");
}

TEST(TensorflowLayouts, WeightsAndActivationsGoToTensorflowsLayoutsAndBack) {
    hb::Tensor w;
    w.shape = {4, 3, 2, 5};  // O I H W
    w.elements = 120;
    EXPECT_EQ(hb_tensorflow::tensorflow_shape(w), (std::vector<int64_t>{2, 5, 3, 4}));
    std::vector<float> oihw(120), hwio(120), back(120);
    std::iota(oihw.begin(), oihw.end(), 0.f);
    hb_tensorflow::oihw_to_hwio(w, oihw.data(), hwio.data());
    // OIHW [o=1][i=2][h=1][w=3] is HWIO [h=1][w=3][i=2][o=1].
    EXPECT_EQ(hwio[((1 * 5 + 3) * 3 + 2) * 4 + 1], oihw[((1 * 3 + 2) * 2 + 1) * 5 + 3]);
    hb_tensorflow::hwio_to_oihw(w, hwio.data(), back.data());
    EXPECT_EQ(back, oihw);

    const hb::Dims d{2, 3, 4, 5};
    std::vector<float> nchw(120), nhwc(120);
    std::iota(nchw.begin(), nchw.end(), 0.f);
    hb_tensorflow::nchw_to_nhwc(d, nchw.data(), nhwc.data());
    EXPECT_EQ(nhwc[((1 * 4 + 2) * 5 + 3) * 3 + 1], nchw[((1 * 3 + 1) * 4 + 2) * 5 + 3]);
    hb_tensorflow::nhwc_to_nchw(d, nhwc.data(), back.data());
    EXPECT_EQ(back, nchw);

    hb::Tensor gamma;
    gamma.shape = {7};
    gamma.elements = 7;
    EXPECT_EQ(hb_tensorflow::tensorflow_shape(gamma), (std::vector<int64_t>{7}));
}

bool plugin_built() {
    return std::filesystem::exists(std::string(HB_PLUGIN_DIR) + "/hb_tensorflow.so");
}

// A profiled run: the trace is valid, and the executed nodes are counted under the IR's
// operation kinds, convolutions split into forward, backward-data and backward-weights.
TEST(TensorflowProfile, ATracedRunCountsTensorflowsNodesByKind) {
    if (!plugin_built()) GTEST_SKIP() << "plugin tensorflow is not built on this machine";
    TempDir dir;
    const std::string csv = dir / "p.csv", traces = dir / "traces";
    auto r = run_harness("run " + std::string(HB_SOURCE_DIR) +
                         "/configs/check-tiny.yaml --backends tensorflow --warmup 1 "
                         "--iterations 2 --profile-steps 2 --output " +
                         csv + " --trace " + traces);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::ifstream sidecar(dir / "p.json");
    const nlohmann::json j = nlohmann::json::parse(sidecar);
    const auto run = harness::output::backend_run_from_json(j["runs"][0]);
    ASSERT_TRUE(run.profile);
    for (const char* kind : {"convolution forward", "convolution backward-data",
                             "convolution backward-weights", "batch norm", "optimizer"})
        EXPECT_GT(run.profile->kinds_ms.count(kind), 0u) << kind;
    std::ifstream trace_file(std::filesystem::path(traces) / "check-tiny.tensorflow.json");
    const nlohmann::json trace = nlohmann::json::parse(trace_file);
    EXPECT_EQ(harness::testing::trace_problems(trace), std::vector<std::string>{});
}

// The first worker builds the gradients and stores them; the next imports the same nodes (its
// graph's nodes by part and type are the same) and computes the same steps. A file of another key,
// or of this one whose bytes do not import, is built over, the latter saying so; a file unused for
// 30 days goes; HB_TENSORFLOW_CACHE=off builds every time and stores nothing.
TEST(TensorflowGradientCache, TheFirstWorkerStoresTheGradientsAndTheNextImportsTheSameGraph) {
    if (!plugin_built()) GTEST_SKIP() << "plugin tensorflow is not built on this machine";
    TempDir dir;
    const std::filesystem::path cache = dir / "cache";
    const std::string env = "HB_TENSORFLOW_CACHE=" + cache.string();
    auto rows = [&](const std::string& environment, int rounds) {
        const std::string csv = dir / "r.csv";
        auto r = run_harness("run " + std::string(HB_SOURCE_DIR) +
                                 "/configs/check-tiny.yaml --backends tensorflow --warmup 1 "
                                 "--iterations 2 --interleave workers --rounds " +
                                 std::to_string(rounds) + " --output " + csv,
                             environment);
        EXPECT_EQ(r.exit_code, 0) << r.output;
        std::ifstream sidecar(dir / "r.json");
        return nlohmann::json::parse(sidecar)["runs"];
    };
    auto source = [](const nlohmann::json& row) {
        return row["manifest"].value("gradients_source", "");
    };

    // A file no worker has used for 30 days goes when the next is stored.
    std::filesystem::create_directories(cache);
    std::ofstream(cache / "unused.gradients") << "hb-tensorflow-gradients 1\n";
    std::filesystem::last_write_time(
        cache / "unused.gradients",
        std::filesystem::file_time_type::clock::now() - std::chrono::hours(24 * 30));

    const nlohmann::json two = rows(env, 2);
    ASSERT_EQ(two.size(), 2u);
    EXPECT_FALSE(std::filesystem::exists(cache / "unused.gradients"));
    EXPECT_EQ(source(two[0]).rfind("built by TF_AddGradients in ", 0), 0u) << source(two[0]);
    EXPECT_NE(source(two[0]).find(", stored in " + cache.string()), std::string::npos)
        << source(two[0]);
    EXPECT_EQ(source(two[1]).rfind("imported from " + cache.string(), 0), 0u) << source(two[1]);
    EXPECT_EQ(two[0]["manifest"]["graph_ops"], two[1]["manifest"]["graph_ops"]);
    EXPECT_EQ(two[0]["losses"], two[1]["losses"]);

    std::vector<std::filesystem::path> files;
    for (const auto& f : std::filesystem::directory_iterator(cache)) files.push_back(f.path());
    ASSERT_EQ(files.size(), 1u);
    std::string format, key;
    {
        std::ifstream in(files[0]);
        std::getline(in, format);
        std::getline(in, key);
    }
    // Its own key but bytes that are no GraphDef: not imported, built again.
    std::ofstream(files[0], std::ios::trunc) << format << "\n" << key << "\ngraph_def 4\nabcd";
    nlohmann::json one = rows(env, 1);
    EXPECT_EQ(source(one[0]).rfind("built by TF_AddGradients in ", 0), 0u) << source(one[0]);
    EXPECT_NE(source(one[0]).find(" not imported: "), std::string::npos) << source(one[0]);
    EXPECT_EQ(one[0]["losses"], two[0]["losses"]);
    // Another key's file under this name: built over.
    std::ofstream(files[0], std::ios::trunc) << format << "\nkey another\n";
    one = rows(env, 1);
    EXPECT_EQ(source(one[0]).rfind("built by TF_AddGradients in ", 0), 0u) << source(one[0]);
    EXPECT_EQ(source(one[0]).find(" not imported: "), std::string::npos) << source(one[0]);

    std::filesystem::remove_all(cache);
    one = rows("HB_TENSORFLOW_CACHE=off", 1);
    EXPECT_NE(source(one[0]).find("(no cache: HB_TENSORFLOW_CACHE off, or no HOME)"),
              std::string::npos)
        << source(one[0]);
    EXPECT_FALSE(std::filesystem::exists(cache));
}

// An option TensorFlow would ignore fails its entry with the reason, and the run goes on.
TEST(TensorflowOptions, WhatTensorflowWouldIgnoreFailsTheEntryNamingTheFix) {
    if (!plugin_built()) GTEST_SKIP() << "plugin tensorflow is not built on this machine";
    TempDir dir;
    const std::string csv = dir / "r.csv";
    auto r = run_harness("run " + std::string(HB_TEST_DATA_DIR) +
                         "/tensorflow_refusals.yaml --output " + csv);
    EXPECT_EQ(r.exit_code, 1) << r.output;  // every backend failed
    std::ifstream sidecar(dir / "r.json");
    const nlohmann::json j = nlohmann::json::parse(sidecar);
    std::map<std::string, std::string> messages;
    for (const auto& run : j["runs"]) {
        EXPECT_EQ(run["status"], "failed") << run.dump();
        messages[run["backend"]] = run.value("message", "");
    }
    EXPECT_NE(messages["onednn-asked-not-loaded"].find(
                  "ran no oneDNN kernel (TF_ENABLE_ONEDNN_OPTS was '0'"),
              std::string::npos)
        << messages["onednn-asked-not-loaded"];
    EXPECT_NE(messages["onednn-loaded-not-asked"].find("TF_ENABLE_ONEDNN_OPTS: \"0\""),
              std::string::npos)
        << messages["onednn-loaded-not-asked"];
    EXPECT_NE(messages["nchw"].find("NHWC only"), std::string::npos) << messages["nchw"];
}

// Left to itself, TensorFlow runs oneDNN's kernels exactly where the CPU has one of the features
// its default looks for; the manifest says which ran and why.
TEST(TensorflowKernels, TheDefaultFollowsTheCpuFeaturesAndTheManifestSaysWhichRan) {
    if (!plugin_built()) GTEST_SKIP() << "plugin tensorflow is not built on this machine";
    if (std::getenv("TF_ENABLE_ONEDNN_OPTS"))
        GTEST_SKIP() << "TF_ENABLE_ONEDNN_OPTS is set here: TensorFlow's default is not in play";
    const hb_tensorflow::OnednnDefault expected = hb_tensorflow::onednn_default();
    const std::set<std::string> flags = hb::cpu_flags();
    for (const std::string& f : hb_tensorflow::kOnednnFeatures)
        EXPECT_EQ(flags.count(f) > 0, std::count(expected.features.begin(),
                                                 expected.features.end(), f) > 0) << f;
    TempDir dir;
    const std::string csv = dir / "r.csv";
    auto r = run_harness("run " + std::string(HB_TEST_DATA_DIR) +
                         "/tensorflow_default.yaml --output " + csv);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::ifstream sidecar(dir / "r.json");
    const nlohmann::json manifest = nlohmann::json::parse(sidecar)["runs"][0]["manifest"];
    EXPECT_EQ(manifest["onednn_environment"], "");
    EXPECT_EQ(manifest["onednn_default"], hb_tensorflow::onednn_default_text(expected));
    EXPECT_EQ(manifest["kernels"],
              expected.on ? "oneDNN (_Mkl ops)" : "TensorFlow's own (Eigen)");
    EXPECT_EQ(manifest["onednn_kernels_in_forward"].get<int>() > 0, expected.on);
    // A timed session is not read back (hb_session_desc.read_back 0): it fetches no gradients.
    EXPECT_EQ(manifest["gradients_fetched_each_step"], false);
}

// What TensorFlow logs while it loads ("oneDNN custom operations are on") is kept in the listing's
// "log", not printed among the plugins; its declared options are listed.
TEST(TensorflowListing, ItsLoadLogIsKeptOffTheConsoleAndItsOptionsAreListed) {
    if (!plugin_built()) GTEST_SKIP() << "plugin tensorflow is not built on this machine";
    auto r = run_harness("list", "TF_ENABLE_ONEDNN_OPTS=1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output.find("oneDNN custom operations"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("batchnorm (fused|unfused; default fused)"), std::string::npos)
        << r.output;
    r = run_harness("list --json", "TF_ENABLE_ONEDNN_OPTS=1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const nlohmann::json listing = nlohmann::json::parse(r.output);
    for (const auto& p : listing["plugins"]) {
        if (p.value("name", "") == "tensorflow") {
            EXPECT_NE(p.value("log", "").find("oneDNN custom operations"), std::string::npos) << p;
        }
    }
}

// Its options are declared (ABI 2.4): a typo or a value of the wrong kind stops the run at its
// place in the config before TensorFlow is asked for anything.
TEST(TensorflowOptions, ATypoOrABadValueIsAConfigErrorBeforeAnythingRuns) {
    if (!plugin_built()) GTEST_SKIP() << "plugin tensorflow is not built on this machine";
    TempDir dir;
    const std::string config = dir / "bad.yaml";
    std::ofstream(config) << "model: {stacks: 1, features: 8, depth: 1, joints: 2, input_size: 32, "
                             "batch: 2}\nbackends:\n"
                             "  - plugin: tensorflow\n    options: {threads: 1, batchnrom: unfused}\n";
    auto r = run_harness("run " + config + " --output " + (dir / "o.csv"));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(":4:38: key 'backends[0].options.batchnrom': the tensorflow plugin has "
                            "no option 'batchnrom'"),
              std::string::npos)
        << r.output;
    std::ofstream(config) << "model: {stacks: 1, features: 8, depth: 1, joints: 2, input_size: 32, "
                             "batch: 2}\nbackends:\n"
                             "  - plugin: tensorflow\n    options: {feed_dtype: float16}\n";
    r = run_harness("run " + config + " --output " + (dir / "o.csv"));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("key 'backends[0].options.feed_dtype': expected one of float32, "
                            "float64, got 'float16'"),
              std::string::npos)
        << r.output;
    EXPECT_FALSE(std::filesystem::exists(dir / "o.csv"));
}

}  // namespace
