// The config loader: every key, its defaults, and each bad config refused at its node.
#include "config/config.hpp"
#include "config/printable.hpp"
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

std::string data(const std::string& name) {
    return std::string(HB_TEST_DATA_DIR) + "/configs/" + name;
}

std::string load_error(const std::string& path) {
    try {
        hc::load_config(path);
    } catch (const hc::ConfigError& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST(LoadConfig, Defaults) {
    const hc::RunConfig c = hc::load_config(data("minimal.yaml"));
    EXPECT_EQ(c.name, "minimal");  // the file's stem
    EXPECT_EQ(c.description, "");
    const harness::model::HourglassSpec defaults;
    EXPECT_EQ(c.model.stacks, defaults.stacks);
    EXPECT_EQ(c.model.features, defaults.features);
    EXPECT_EQ(c.model.depth, defaults.depth);
    EXPECT_EQ(c.model.joints, defaults.joints);
    EXPECT_EQ(c.model.input_size, defaults.input_size);
    EXPECT_EQ(c.model.batch, defaults.batch);
    EXPECT_EQ(c.model.conv_bias, defaults.conv_bias);
    EXPECT_EQ(c.model.bn_momentum, defaults.bn_momentum);
    EXPECT_EQ(c.model.bn_eps, defaults.bn_eps);
    EXPECT_EQ(c.model.loss, defaults.loss);
    expect_rmsprop_torch(c.optimizer);
    EXPECT_EQ(c.seed, 1u);
    EXPECT_EQ(c.batches, 2);
    EXPECT_EQ(c.placement, HB_PLACEMENT_DEVICE);
    EXPECT_EQ(c.warmup, 3);
    EXPECT_EQ(c.iterations, 10);
    EXPECT_EQ(c.timeout_s, 600);
    ASSERT_EQ(c.backends.size(), 1u);
    expect_backend(c.backends[0], "reference", "reference", "cpu");
    EXPECT_TRUE(c.backends[0].options.empty());
    EXPECT_EQ(c.backends[0].line, 3);
    EXPECT_EQ(c.backends[0].warmup, -1);
    EXPECT_EQ(c.backends[0].iterations, -1);
    EXPECT_EQ(c.backends[0].timeout_s, -1);
    EXPECT_EQ(c.backends[0].placement, HB_PLACEMENT_DEVICE);
}

TEST(LoadConfig, TensorflowVariantDefaults) {
    const hb_optimizer o = hc::load_config(data("tensorflow.yaml")).optimizer;
    EXPECT_EQ(o.variant, HB_RMSPROP_TENSORFLOW);
    EXPECT_FLOAT_EQ(o.learning_rate, 2.5e-4f);
    EXPECT_FLOAT_EQ(o.alpha, 0.9f);
    EXPECT_FLOAT_EQ(o.eps, 1e-10f);
    EXPECT_EQ(o.momentum, 0.0f);
    EXPECT_EQ(o.weight_decay, 0.0f);
    EXPECT_EQ(o.initial_square_average, 1.0f);
}

TEST(LoadConfig, EveryKeySet) {
    const hc::RunConfig c = hc::load_config(data("full.yaml"));
    EXPECT_EQ(c.name, "everything");
    EXPECT_EQ(c.description, "every key, none at its default");
    EXPECT_EQ(c.model.stacks, 3);
    EXPECT_EQ(c.model.features, 32);
    EXPECT_EQ(c.model.depth, 3);
    EXPECT_EQ(c.model.joints, 5);
    EXPECT_EQ(c.model.input_size, 64);
    EXPECT_EQ(c.model.batch, 4);
    EXPECT_FALSE(c.model.conv_bias);
    EXPECT_FALSE(c.model.bn_scale);
    EXPECT_FLOAT_EQ(c.model.bn_momentum, 0.2f);
    EXPECT_FLOAT_EQ(c.model.bn_eps, 1e-3f);
    EXPECT_EQ(c.model.loss, harness::model::LossReduction::mean);

    // Explicit values win over the variant's defaults.
    EXPECT_EQ(c.optimizer.variant, HB_RMSPROP_TENSORFLOW);
    EXPECT_FLOAT_EQ(c.optimizer.learning_rate, 1.0f);
    EXPECT_FLOAT_EQ(c.optimizer.alpha, 0.5f);
    EXPECT_FLOAT_EQ(c.optimizer.eps, 1e-3f);
    EXPECT_FLOAT_EQ(c.optimizer.momentum, 0.9f);
    EXPECT_FLOAT_EQ(c.optimizer.weight_decay, 1e-4f);
    EXPECT_EQ(c.optimizer.initial_square_average, 1.0f);

    EXPECT_EQ(c.seed, UINT64_MAX);
    EXPECT_EQ(c.batches, 64);
    EXPECT_EQ(c.placement, HB_PLACEMENT_HOST);
    EXPECT_EQ(c.warmup, 0);
    EXPECT_EQ(c.iterations, 1000000);
    EXPECT_EQ(c.timeout_s, 0.5);

    ASSERT_EQ(c.backends.size(), 2u);
    expect_backend(c.backends[0], "one.DNN_cpu-1", "onednn", "cpu");
    const std::map<std::string, std::string> options = {{"threads", "4"},
                                                        {"verbose", "true"},
                                                        {"scale", "0.5"},
                                                        {"label", "two words"},
                                                        {"empty", ""}};
    EXPECT_EQ(c.backends[0].options, options);
    const std::map<std::string, std::string> environment = {{"TF_ENABLE_ONEDNN_OPTS", "1"},
                                                             {"OMP_PROC_BIND", "false"}};
    EXPECT_EQ(c.backends[0].environment, environment);
    EXPECT_TRUE(c.backends[1].environment.empty());
    EXPECT_EQ(c.backends[0].line, 33);
    EXPECT_EQ(c.backends[0].placement, HB_PLACEMENT_HOST);  // data.placement
    expect_backend(c.backends[1], "libtorch", "libtorch", "cuda:1");
    EXPECT_EQ(c.backends[1].placement, HB_PLACEMENT_DEVICE);  // its own
    EXPECT_EQ(c.backends[1].warmup, 0);
    EXPECT_EQ(c.backends[1].iterations, 7);
    EXPECT_EQ(c.backends[1].timeout_s, 30);
    EXPECT_EQ(c.backends[1].line, 45);
}

TEST(LoadConfig, ToString) {
    EXPECT_STREQ(hc::to_string(HB_PLACEMENT_DEVICE), "device");
    EXPECT_STREQ(hc::to_string(HB_PLACEMENT_HOST), "host");
    EXPECT_STREQ(hc::to_string(HB_RMSPROP_TORCH), "torch");
    EXPECT_STREQ(hc::to_string(HB_RMSPROP_TENSORFLOW), "tensorflow");
}

TEST(LoadConfig, MissingFile) {
    const std::string path = data("does_not_exist.yaml");
    EXPECT_EQ(load_error(path), path + ": cannot read config: No such file or directory");
}

TEST(LoadConfig, DirectoryIsNotAConfig) {
    const std::string path = data("");
    EXPECT_EQ(load_error(path), path + ": cannot read config: Is a directory");
}

struct BadConfig {
    const char* file;
    const char* error;  // what() after the file's path
};

void PrintTo(const BadConfig& c, std::ostream* os) {
    *os << c.file;
}

class BadConfigTest : public testing::TestWithParam<BadConfig> {};

TEST_P(BadConfigTest, FailsAtTheOffendingNode) {
    const std::string path = data(GetParam().file);
    EXPECT_EQ(load_error(path), path + GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(
    Configs, BadConfigTest,
    testing::Values(
        BadConfig{"bad_unknown_key.yaml",
                  ":3:3: key 'model.stakcs': unknown key 'model.stakcs' (did you mean 'stacks'?)"},
        BadConfig{"bad_unknown_key_no_suggestion.yaml",
                  ":1:1: key 'colour': unknown key 'colour' (expected one of: name, description, "
                  "model, optimizer, data, run, parallel, backends)"},
        BadConfig{"bad_backend_unknown_key.yaml",
                  ":4:5: key 'backends[1].devcie': unknown key 'backends[1].devcie' (did you mean "
                  "'device'?)"},
        BadConfig{"bad_type.yaml",
                  ":2:11: key 'model.stacks': expected an integer in [1, 16], got 'abc'"},
        BadConfig{"bad_type_float_for_int.yaml",
                  ":2:10: key 'model.batch': expected an integer in [1, 4096], got '2.5'"},
        BadConfig{"bad_type_quoted_int.yaml",
                  ":2:11: key 'model.stacks': expected an integer in [1, 16], got the string '8'"},
        BadConfig{"bad_type_map_for_scalar.yaml",
                  ":2:11: key 'model.joints': expected an integer in [1, 1024], got a mapping"},
        BadConfig{"bad_type_list_for_map.yaml",
                  ":1:8: key 'model': expected a mapping, got a list"},
        BadConfig{"bad_empty_value.yaml",
                  ":2:3: key 'run.iterations': expected an integer in [1, 1000000], got an empty "
                  "value"},
        BadConfig{"bad_range.yaml",
                  ":2:11: key 'model.stacks': expected an integer in [1, 16], got '17'"},
        BadConfig{"bad_input_block.yaml",
                  ":3:16: key 'data.input_block': expected a divisor of model.input_size (64), "
                  "got '24'"},
        BadConfig{"bad_range_float.yaml",
                  ":2:10: key 'optimizer.alpha': expected a number in [0, 1), got '1.0'"},
        BadConfig{"bad_range_float32.yaml",
                  ":2:10: key 'optimizer.alpha': expected a number in [0, 1), got '0.9999999999', "
                  "which is 1 as a float32"},
        BadConfig{"bad_range_timeout.yaml",
                  ":2:12: key 'run.timeout': expected a number in (0, 604800], got '0'"},
        BadConfig{"bad_range_seed.yaml",
                  ":2:9: key 'data.seed': expected an unsigned 64-bit integer, got '-1'"},
        BadConfig{"bad_range_override.yaml",
                  ":3:17: key 'backends[0].iterations': expected an integer in [1, 1000000], got "
                  "'0'"},
        BadConfig{"bad_backend_placement.yaml",
                  ":4:16: key 'backends[1].placement': expected 'device' or 'host', got 'gpu'"},
        BadConfig{"bad_odd_features.yaml",
                  ":2:13: key 'model.features': expected an even integer in [2, 2048], got '255'"},
        BadConfig{"bad_bool.yaml",
                  ":2:14: key 'model.conv_bias': expected true or false, got 'yes'"},
        BadConfig{"bad_choice.yaml", ":2:9: key 'model.loss': expected 'sum' or 'mean', got 'avg'"},
        BadConfig{"bad_optimizer_type.yaml",
                  ":2:9: key 'optimizer.type': expected 'rmsprop', got 'adam'"},
        BadConfig{"bad_syntax.yaml", ":3:9: syntax error: end of sequence flow not found"},
        BadConfig{"bad_duplicate_backend.yaml",
                  ":6:11: key 'backends[2].name': duplicate backend name 'torch' (first at line "
                  "3)"},
        BadConfig{"bad_duplicate_backend_default_name.yaml",
                  ":3:13: key 'backends[1].plugin': duplicate backend name 'reference' (first at "
                  "line 2)"},
        BadConfig{"bad_duplicate_key.yaml",
                  ":3:3: key 'model.stacks': duplicate key 'model.stacks' (first at line 2)"},
        BadConfig{"bad_missing_backends.yaml",
                  ":1:1: key 'backends': missing required key 'backends'"},
        BadConfig{"bad_empty_backends.yaml",
                  ":1:11: key 'backends': expected a non-empty list of backends, got an empty "
                  "list"},
        BadConfig{"bad_backend_not_a_map.yaml",
                  ":2:5: key 'backends[0]': expected a backend (a mapping with at least "
                  "'plugin'), got 'reference'"},
        BadConfig{"bad_backend_missing_plugin.yaml",
                  ":3:5: key 'backends[1].plugin': missing required key 'backends[1].plugin'"},
        BadConfig{"bad_name_path.yaml",
                  ":1:7: key 'name': expected a name matching [A-Za-z0-9_.-]+, got '../escape'"},
        BadConfig{"bad_name_dot.yaml",
                  ":1:7: key 'name': expected a name that does not start with '.' and has at most "
                  "100 characters, got '.hidden'"},
        BadConfig{"bad_plugin_name.yaml",
                  ":2:13: key 'backends[0].plugin': expected a plugin name matching [a-z0-9_]+, "
                  "got 'Lib-Torch'"},
        BadConfig{"bad_input_size.yaml",
                  ":3:15: key 'model.input_size': input_size 100 must be divisible by 64 (4 * "
                  "2^depth)"},
        BadConfig{"bad_depth_for_input_size.yaml",
                  ":2:10: key 'model.depth': input_size 256 must be divisible by 512 (4 * "
                  "2^depth)"},
        BadConfig{"bad_option_value_map.yaml",
                  ":4:16: key 'backends[0].options.threads': expected a scalar option value, got "
                  "a mapping"},
        BadConfig{"bad_environment_name.yaml",
                  ":4:18: key 'backends[0].environment.TF-ONEDNN': 'TF-ONEDNN' is not the name of "
                  "an environment variable ([A-Za-z_][A-Za-z0-9_]*)"},
        // What would load other code, or cannot take effect once the worker runs.
        BadConfig{"bad_environment_harness.yaml",
                  ":4:28: key 'backends[0].environment.HARNESS_PLUGIN_PATH': "
                  "'HARNESS_PLUGIN_PATH' may not be set by an entry: the harness's own variables "
                  "are set where harness runs, not per entry"},
        BadConfig{"bad_environment_loader.yaml",
                  ":3:53: key 'backends[0].environment.LD_PRELOAD': 'LD_PRELOAD' may not be set "
                  "by an entry: the dynamic loader reads it when the worker starts, before an "
                  "entry's environment is set: it cannot take effect"},
        BadConfig{"bad_environment_value.yaml",
                  ":4:30: key 'backends[0].environment.TF_ENABLE_ONEDNN_OPTS': expected a scalar "
                  "value, got a list"},
        BadConfig{"bad_environment_too_long.yaml",
                  ":5:13: key 'backends[0].environment.LONG': backends[0].environment would put "
                  "16394 characters into its CSV cell, where at most 16384 fit, names and values "
                  "together (CSV readers refuse long fields)"},
        BadConfig{"bad_options_not_a_map.yaml",
                  ":3:14: key 'backends[0].options': expected a mapping, got a list"},
        BadConfig{"bad_empty.yaml", ": the config is empty (it needs at least a 'backends' list)"},
        BadConfig{"bad_two_documents.yaml", ":3:1: expected one YAML document, found more"},
        // yaml-cpp 0.7 reports documents forever after this: refused, not looped on.
        BadConfig{"bad_stray_comma.yaml", ":2:1: expected one YAML document, found more"},
        BadConfig{"bad_top_level_list.yaml", ":1:1: expected a mapping, got a list"},
        // A device no plugin could offer is a typo, refused before anything runs.
        BadConfig{"bad_device_name.yaml",
                  ":3:13: key 'backends[0].device': expected a device, cpu or cuda:N (N = 0, 1, "
                  "...), got 'tpu'"},
        BadConfig{"bad_device_index.yaml",
                  ":2:32: key 'backends[0].device': expected a device, cpu or cuda:N (N = 0, 1, "
                  "...), got the string 'cuda:-1'"},
        BadConfig{"bad_device_cpu_index.yaml",
                  ":3:13: key 'backends[0].device': expected a device, cpu or cuda:N (N = 0, 1, "
                  "...), got 'cpu:99'"},
        // yaml-cpp says "illegal map value" or "illegal tab when looking for indentation".
        BadConfig{"bad_tab_indent.yaml",
                  ":3:1: tab characters are not allowed for indentation (indent with spaces)"},
        BadConfig{"bad_tab_indent_first.yaml",
                  ":2:1: tab characters are not allowed for indentation (indent with spaces)"},
        BadConfig{"bad_parallel_ranks.yaml",
                  ":4:10: key 'parallel.ranks': each rank of a round needs its own batch: "
                  "data.batches (2) must be at least the largest rank count (4)"},
        BadConfig{"bad_parallel_order.yaml",
                  ":4:14: key 'parallel.ranks[1]': expected rank counts in ascending order "
                  "without repeats, got '1' after 2"},
        BadConfig{"bad_parallel_communicator.yaml",
                  ":5:17: key 'parallel.communicator': expected 'auto', 'mpi' or 'nccl', got "
                  "'gloo'"},
        // The error stays on one line.
        BadConfig{"bad_newline_value.yaml",
                  ":3:13: key 'backends[0].device': expected a device, cpu or cuda:N (N = 0, 1, "
                  "...), got the string 'cuda:0\\nrm -rf'"}),
    [](const testing::TestParamInfo<BadConfig>& param) {
        std::string name = param.param.file;
        return name.substr(0, name.find('.'));
    });

namespace {

// A file of the given bytes, removed at the end of the scope.
class TempConfig {
public:
    explicit TempConfig(const std::string& bytes)
        : path_(std::string(::testing::TempDir()) + "/hb-config-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".yaml") {
        std::ofstream(path_, std::ios::binary) << bytes;
    }
    ~TempConfig() { std::remove(path_.c_str()); }
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

TEST(LoadConfig, DeepNestingIsRefusedWhereItGoesTooDeep) {
    // Flow collections: yaml-cpp says "bad file" at the end of the line.
    const TempConfig flow("backends: " + std::string(10000, '[') + std::string(10000, ']') + "\n");
    EXPECT_EQ(load_error(flow.path()),
              flow.path() + ":1:74: nested more than 64 levels deep; a config needs a few");
    // Block mappings, one level deeper on each line.
    std::string block;
    for (int i = 0; i < 3000; ++i)
        block += std::string(size_t(i), ' ') + "k" + std::to_string(i) + ":\n";
    const TempConfig indented(block);
    EXPECT_EQ(load_error(indented.path()),
              indented.path() + ":65:65: nested more than 64 levels deep; a config needs a few");
}

// Every byte of the message is printable ASCII or UTF-8: a config of binary garbage is not
// echoed to the terminal.
TEST(LoadConfig, BinaryGarbageIsNotEchoedRaw) {
    std::string garbage =
        "\x7f"
        "ELF\x02\x01\x01\x00\x1b[31mred\x07\xff\xfe: \x01\x02\n";
    for (int i = 0; i < 256; ++i) garbage += static_cast<char>(i);
    const TempConfig file(garbage);
    const std::string error = load_error(file.path());
    ASSERT_NE(error, "(no error)");
    for (char c : error) {
        const auto byte = static_cast<unsigned char>(c);
        EXPECT_TRUE(byte >= 0x20 && byte < 0x7f) << "byte " << int(byte) << " in: " << error;
    }
    EXPECT_NE(error.find("\\x"), std::string::npos) << error;
}

// The rounds of `run:` (docs/statistics.md, "Rounds in one run"), and each wrong one at its key.
TEST(LoadConfig, TheRunsRoundsItsTargetBudgetAndBaseline) {
    const std::string backends = "backends:\n  - {plugin: reference}\n  - {plugin: onednn}\n";
    const TempConfig good(
        "run: {rounds: 3, max_rounds: 8, target: 0.02, budget: 600, "
        "order_seed: 17, interleave: workers, baseline: onednn}\n" +
        backends);
    const hc::RunConfig c = hc::load_config(good.path());
    EXPECT_EQ(c.rounds, 3);
    EXPECT_EQ(c.max_rounds, 8);
    EXPECT_EQ(c.target, 0.02);
    EXPECT_EQ(c.budget_s, 600);
    EXPECT_EQ(c.order_seed, 17u);
    EXPECT_EQ(c.baseline, "onednn");
    EXPECT_FALSE(c.paired_steps);
    const hc::RunConfig one = hc::load_config(data("minimal.yaml"));  // max_rounds 0: `rounds`
    EXPECT_TRUE(one.rounds == 1 && one.max_rounds == 0 && one.target == 0 && !one.order_seed &&
                one.baseline.empty() && one.paired_steps);

    const TempConfig fewer("run: {rounds: 4, max_rounds: 2}\n" + backends);
    EXPECT_EQ(load_error(fewer.path()),
              fewer.path() + ":1:30: key 'run.max_rounds': expected at least run.rounds (4), got '2'");
    const TempConfig whole("run: {target: 2}\n" + backends);
    EXPECT_NE(load_error(whole.path()).find(":1:15: key 'run.target': "), std::string::npos)
        << load_error(whole.path());
    const TempConfig interleave("run: {interleave: layers}\n" + backends);
    EXPECT_NE(load_error(interleave.path()).find(":1:19: key 'run.interleave': "),
              std::string::npos)
        << load_error(interleave.path());
    const TempConfig stranger("run: {baseline: torch}\n" + backends);
    EXPECT_EQ(load_error(stranger.path()),
              stranger.path() +
                  ":1:17: key 'run.baseline': expected the name of a backend entry (reference, "
                  "onednn), got 'torch'");
}

TEST(Printable, EscapesControlsAndInvalidUtf8AndKeepsText) {
    EXPECT_EQ(harness::printable("plain text: [1, 2]"), "plain text: [1, 2]");
    EXPECT_EQ(harness::printable("a\nb\tc\rd"), "a\\nb\\tc\\rd");
    EXPECT_EQ(harness::printable(std::string("\x1b[31m\x00\x7f", 7)), "\\x1B[31m\\x00\\x7F");
    EXPECT_EQ(harness::printable("caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x98\x80"),
              "caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x98\x80");            // UTF-8 kept
    EXPECT_EQ(harness::printable("\xff\xc3"), "\\xFF\\xC3");           // invalid, truncated
    EXPECT_EQ(harness::printable("\xc0\xaf"), "\\xC0\\xAF");           // overlong '/'
    EXPECT_EQ(harness::printable("\xc2\x85"), "\\xC2\\x85");           // C1 control NEL
    EXPECT_EQ(harness::printable("\xed\xa0\x80"), "\\xED\\xA0\\x80");  // a surrogate
}

}  // namespace

TEST(LoadConfig, ParallelEveryKey) {
    const std::string dir = ::testing::TempDir();
    std::ofstream(dir + "/hosts") << "localhost slots=2\n";
    TempConfig config(
        "model: {stacks: 1, features: 16, depth: 1, joints: 2, input_size: 32, batch: 1}\n"
        "parallel: {ranks: 3, communicator: nccl, bucket_mb: 4, overlap: false, "
        "hostfile: hosts, same_batch: true}\n"
        "backends: [{plugin: cudnn, device: 'cuda:0'}]\n");
    const hc::RunConfig c = hc::load_config(config.path());
    EXPECT_EQ(c.parallel.ranks, (std::vector<int>{3}));  // more than data.batches: same_batch
    EXPECT_EQ(c.parallel.communicator, hc::CommunicatorKind::nccl);
    EXPECT_DOUBLE_EQ(c.parallel.bucket_mb, 4);
    EXPECT_FALSE(c.parallel.overlap);
    EXPECT_TRUE(c.parallel.same_batch);
    EXPECT_EQ(c.parallel.hostfile,
              std::filesystem::absolute(dir + "/hosts").lexically_normal().string());
    EXPECT_STREQ(hc::to_string(c.parallel.communicator), "nccl");
}

TEST(LoadConfig, ParallelHostfileMustExist) {
    TempConfig config(
        "model: {stacks: 1, features: 16, depth: 1, joints: 2, input_size: 32, batch: 1}\n"
        "parallel: {ranks: 1, hostfile: no-such-hosts}\n"
        "backends: [{plugin: reference}]\n");
    EXPECT_NE(load_error(config.path()).find("key 'parallel.hostfile': no hostfile at "),
              std::string::npos)
        << load_error(config.path());
}
