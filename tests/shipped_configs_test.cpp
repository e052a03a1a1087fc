// The configs the repository ships: each loads, with the network, optimizer, backends and
// ablation steps it is meant to have.
#include "config/config.hpp"
#include "config/printable.hpp"
#include "hb/sha256.hpp"
#include "config_expectations.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace hc = harness::config;

namespace {

using harness::testing::expect_backend;
using harness::testing::expect_rmsprop_torch;
using harness::testing::shipped_config;

std::string file_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}


void expect_seed_model(const harness::model::HourglassSpec& m, int stacks) {
    EXPECT_EQ(m.stacks, stacks);
    EXPECT_EQ(m.features, 256);
    EXPECT_EQ(m.depth, 4);
    EXPECT_EQ(m.joints, 16);
    EXPECT_EQ(m.input_size, 256);
    EXPECT_EQ(m.batch, 6);
    EXPECT_TRUE(m.conv_bias);
    EXPECT_TRUE(m.bn_scale);
    EXPECT_FLOAT_EQ(m.bn_momentum, 0.1f);
    EXPECT_FLOAT_EQ(m.bn_eps, 1e-5f);
    EXPECT_EQ(m.loss, harness::model::LossReduction::sum);
}

// What an ablation entry changes from its base (the first entry of its plugin and device): each
// option whose value differs or that only one of them sets, and the placement.
std::vector<std::string> changed(const hc::BackendEntry& base, const hc::BackendEntry& entry) {
    std::vector<std::string> keys;
    for (const auto& [key, value] : entry.options) {
        auto b = base.options.find(key);
        if (b == base.options.end() || b->second != value) keys.push_back(key);
    }
    for (const auto& kv : base.options)
        if (entry.options.count(kv.first) == 0) keys.push_back(kv.first);
    if (base.placement != entry.placement) keys.push_back("placement");
    return keys;
}

// An ablation config NAME.yaml: hourglassSTACKS.yaml's network and optimizer, its data on the
// device (an entry may set its own placement).
hc::RunConfig load_ablation(const std::string& name, int stacks) {
    hc::RunConfig c = hc::load_config(shipped_config(name + ".yaml"));
    EXPECT_EQ(c.name, name);
    expect_seed_model(c.model, stacks);
    expect_rmsprop_torch(c.optimizer);
    EXPECT_EQ(c.placement, HB_PLACEMENT_DEVICE);
    return c;
}

// Each entry of an ablation config changes exactly one thing from its base; returns the entries'
// changes in order ("" for a base).
std::vector<std::string> ablation_changes(const hc::RunConfig& c) {
    std::vector<std::string> found;
    for (size_t i = 0; i < c.backends.size(); ++i) {
        const hc::BackendEntry& entry = c.backends[i];
        size_t base = 0;
        while (c.backends[base].plugin != entry.plugin || c.backends[base].device != entry.device)
            ++base;
        if (base == i) {
            found.push_back("");
            continue;
        }
        const std::vector<std::string> keys = changed(c.backends[base], entry);
        EXPECT_EQ(keys.size(), 1u) << entry.name;
        found.push_back(keys.empty() ? "(none)" : keys.front());
    }
    return found;
}

}  // namespace

TEST(ShippedConfigs, CpuAblation) {
    const hc::RunConfig c = load_ablation("cpu-ablation", 2);
    ASSERT_EQ(c.backends.size(), 13u);
    expect_backend(c.backends[0], "onednn", "onednn", "cpu");
    expect_backend(c.backends[5], "libtorch-cpu", "libtorch", "cpu");
    expect_backend(c.backends[8], "tensorflow", "tensorflow", "cpu");
    EXPECT_EQ(c.backends[3].placement, HB_PLACEMENT_HOST);
    EXPECT_EQ(c.backends[7].placement, HB_PLACEMENT_HOST);
    EXPECT_EQ(c.backends[10].placement, HB_PLACEMENT_HOST);
    EXPECT_EQ(c.backends[12].environment.at("TF_ENABLE_ONEDNN_OPTS"), "1");
    const std::vector<std::string> expected = {"",
                                               "fuse_batchnorm_relu",
                                               "native_pooling",
                                               "placement",
                                               "layout",
                                               "",
                                               "layout",
                                               "placement",
                                               "",
                                               "batchnorm",
                                               "placement",
                                               "xla",
                                               "onednn"};
    EXPECT_EQ(ablation_changes(c), expected);
    for (const hc::BackendEntry& b : c.backends) {
        EXPECT_EQ(b.device, "cpu") << b.name;
        EXPECT_EQ(b.options.at("threads"), "2") << b.name;
    }
}

TEST(ShippedConfigs, SeedAblation) {
    const hc::RunConfig c = load_ablation("seed-ablation", 8);
    ASSERT_EQ(c.backends.size(), 16u);
    expect_backend(c.backends[0], "cudnn", "cudnn", "cuda:0");
    expect_backend(c.backends[9], "libtorch-cuda", "libtorch", "cuda:0");
    EXPECT_TRUE(c.backends[0].options.empty());
    EXPECT_TRUE(c.backends[9].options.empty());
    const std::vector<std::string> expected = {
        "",          "placement", "fuse_batchnorm_relu", "layout",        "cuda_graphs",
        "math",      "math",      "convolution_api",     "batchnorm_api", "",
        "placement", "layout",    "cudnn_benchmark",     "cuda_graphs",   "math",
        "foreach"};
    EXPECT_EQ(ablation_changes(c), expected);
    for (const hc::BackendEntry& b : c.backends) EXPECT_EQ(b.device, "cuda:0") << b.name;
}

TEST(ShippedConfigs, Hourglass8) {
    const hc::RunConfig c = hc::load_config(shipped_config("hourglass8.yaml"));
    EXPECT_EQ(c.name, "hourglass8");
    EXPECT_FALSE(c.description.empty());
    expect_seed_model(c.model, 8);
    expect_rmsprop_torch(c.optimizer);
    EXPECT_EQ(c.seed, 1u);
    EXPECT_EQ(c.batches, 2);
    EXPECT_EQ(c.placement, HB_PLACEMENT_DEVICE);
    EXPECT_EQ(c.warmup, 2);
    EXPECT_EQ(c.iterations, 2);
    EXPECT_EQ(c.timeout_s, 1800);
    // Rounds until every interval against libtorch-cpu is within ±2%, 3 to 10, within 13 min.
    EXPECT_EQ(c.rounds, 3);
    EXPECT_EQ(c.max_rounds, 10);
    EXPECT_EQ(c.target, 0.02);
    EXPECT_EQ(c.budget_s, 780);
    EXPECT_EQ(c.baseline, "libtorch-cpu");
    EXPECT_FALSE(c.order_seed.has_value());
    ASSERT_EQ(c.backends.size(), 13u);
    expect_backend(c.backends[11], "tensorflow", "tensorflow", "cpu");
    expect_backend(c.backends[12], "tensorflow-onednn", "tensorflow", "cpu");
    expect_backend(c.backends[0], "onednn", "onednn", "cpu");
    expect_backend(c.backends[1], "libtorch-cpu", "libtorch", "cpu");
    expect_backend(c.backends[2], "libtorch-cuda", "libtorch", "cuda:0");
    expect_backend(c.backends[3], "cudnn", "cudnn", "cuda:0");
    expect_backend(c.backends[6], "cudnn-tf32-graphs", "cudnn", "cuda:0");
    EXPECT_EQ(c.backends[6].options.at("math"), "tf32");
    EXPECT_EQ(c.backends[6].options.at("cuda_graphs"), "true");
    expect_backend(c.backends[7], "cudnn-bf16-graphs", "cudnn", "cuda:0");
    EXPECT_EQ(c.backends[7].options.at("math"), "bf16");
    expect_backend(c.backends[8], "cudnn-legacy", "cudnn", "cuda:0");
    EXPECT_EQ(c.backends[8].options.at("convolution_api"), "legacy");
    expect_backend(c.backends[9], "onednn-debian", "onednn_debian", "cpu");
    expect_backend(c.backends[10], "libtorch-cpu-debian", "libtorch_debian", "cpu");
    EXPECT_EQ(c.backends[0].options.at("threads"), "2");
    EXPECT_EQ(c.backends[1].options.at("threads"), "2");
    EXPECT_TRUE(c.backends[2].options.empty());
    for (const hc::BackendEntry& b : c.backends) {
        EXPECT_NE(b.plugin, "reference");
        // oneDNN reaches its steady state in one step; a GPU entry times 20 steps a round,
        // every CPU entry the run's 2, so that their round figures are medians of as many steps.
        const bool onednn = b.plugin.rfind("onednn", 0) == 0, gpu = b.device != "cpu";
        EXPECT_EQ(b.warmup, onednn ? 1 : gpu ? 3 : -1) << b.name;
        EXPECT_EQ(b.iterations, gpu ? 20 : -1) << b.name;
        EXPECT_EQ(b.timeout_s, -1);
    }
}

TEST(ShippedConfigs, Check) {
    const hc::RunConfig c = hc::load_config(shipped_config("check.yaml"));
    EXPECT_EQ(c.model.stacks, 2);
    EXPECT_EQ(c.model.features, 32);
    ASSERT_EQ(c.backends.size(), 13u);
    expect_backend(c.backends[10], "tensorflow", "tensorflow", "cpu");
    expect_backend(c.backends[0], "reference", "reference", "cpu");
    expect_backend(c.backends[4], "onednn-debian", "onednn_debian", "cpu");
    expect_backend(c.backends[5], "libtorch-cpu-debian", "libtorch_debian", "cpu");
    expect_backend(c.backends[8], "cudnn-tf32", "cudnn", "cuda:0");
    expect_backend(c.backends[9], "cudnn-bf16", "cudnn", "cuda:0");
    EXPECT_EQ(c.backends[9].options.at("math"), "bf16");
}

TEST(ShippedConfigs, Hourglass2) {
    const hc::RunConfig c = hc::load_config(shipped_config("hourglass2.yaml"));
    EXPECT_EQ(c.name, "hourglass2");
    expect_seed_model(c.model, 2);
    expect_rmsprop_torch(c.optimizer);
    ASSERT_EQ(c.backends.size(), 9u);
    expect_backend(c.backends[7], "tensorflow", "tensorflow", "cpu");
    expect_backend(c.backends[0], "reference", "reference", "cpu");
    expect_backend(c.backends[1], "onednn", "onednn", "cpu");
    expect_backend(c.backends[2], "libtorch-cpu", "libtorch", "cpu");
    expect_backend(c.backends[3], "onednn-debian", "onednn_debian", "cpu");
    expect_backend(c.backends[4], "libtorch-cpu-debian", "libtorch_debian", "cpu");
    expect_backend(c.backends[5], "libtorch-cuda", "libtorch", "cuda:0");
    expect_backend(c.backends[6], "cudnn", "cudnn", "cuda:0");
    EXPECT_EQ(c.backends[0].options.at("threads"), "2");
    EXPECT_EQ(c.backends[0].warmup, 1);
    EXPECT_EQ(c.backends[0].iterations, 3);
    EXPECT_EQ(c.backends[0].timeout_s, -1);
    EXPECT_EQ(c.backends[1].warmup, -1);
}

TEST(ShippedConfigs, Tiny) {
    const hc::RunConfig c = hc::load_config(shipped_config("tiny.yaml"));
    EXPECT_EQ(c.name, "tiny");
    EXPECT_EQ(c.model.stacks, 2);
    EXPECT_EQ(c.model.features, 16);
    EXPECT_EQ(c.model.depth, 2);
    EXPECT_EQ(c.model.joints, 4);
    EXPECT_EQ(c.model.input_size, 32);
    EXPECT_EQ(c.model.batch, 2);
    expect_rmsprop_torch(c.optimizer);
    EXPECT_EQ(c.warmup, 1);
    EXPECT_EQ(c.iterations, 5);
    EXPECT_EQ(c.timeout_s, 120);
    ASSERT_EQ(c.backends.size(), 1u);
    expect_backend(c.backends[0], "reference", "reference", "cpu");
    EXPECT_EQ(c.backends[0].options, (std::map<std::string, std::string>{{"threads", "2"}}));
}

TEST(ShippedConfigs, Sha256IsOfTheFileBytes) {
    const std::string path = shipped_config("tiny.yaml");
    const hc::RunConfig c = hc::load_config(path);
    EXPECT_EQ(c.path, path);
    EXPECT_EQ(c.sha256, hb::sha256_hex(file_bytes(path)));
    EXPECT_EQ(c.sha256.size(), 64u);
}

TEST(ShippedConfigs, CheckParallel) {
    const hc::RunConfig c = hc::load_config(shipped_config("check-parallel.yaml"));
    EXPECT_EQ(c.parallel.ranks, (std::vector<int>{1, 2}));
    EXPECT_EQ(c.parallel.communicator, hc::CommunicatorKind::automatic);
    EXPECT_TRUE(c.parallel.overlap);
    EXPECT_FALSE(c.parallel.same_batch);
    EXPECT_DOUBLE_EQ(c.parallel.bucket_mb, 0.05);
    EXPECT_TRUE(c.parallel.hostfile.empty());
}

TEST(LoadConfig, NoParallelSectionMeansOneProcess) {
    EXPECT_TRUE(hc::load_config(shipped_config("check.yaml")).parallel.ranks.empty());
}

TEST(ShippedConfigs, ParallelCpu) {
    const hc::RunConfig c = hc::load_config(shipped_config("parallel-cpu.yaml"));
    EXPECT_EQ(c.parallel.ranks, (std::vector<int>{1, 2}));
    EXPECT_EQ(c.parallel.communicator, hc::CommunicatorKind::mpi);
    for (const auto& b : c.backends) EXPECT_EQ(b.options.at("threads"), "1") << b.name;
}
