// A worker receives its job resolved by the harness (run/job_file.hpp): the config as the harness
// read it, the one entry it runs, and the job; it never reads the config file.
#include "run/job_file.hpp"
#include "config/config.hpp"
#include "harness_process.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace {

namespace fs = std::filesystem;
using harness::testing::read_json;
using harness::testing::run_harness;
using harness::testing::TempDir;

TEST(JobFile, RoundTripsTheConfigTheEntryAndTheJob) {
    auto config =
        harness::config::load_config(std::string(HB_TEST_DATA_DIR) + "/configs/full.yaml");
    config.backends[1].options_in_force = {{"threads", "2"}, {"math", "fp32"}};
    harness::run::WorkerJob job;
    job.backend = 1;
    job.options = {{"threads", "3"}};
    job.overrides.iterations = 4;
    job.result_path = "/somewhere/r.json";
    job.capture = harness::run::Capture{"/somewhere/capture", "/somewhere/else", 2};
    job.unit = 2;
    const auto [read, read_job] = harness::run::job_from_json(harness::run::job_json(config, job));
    EXPECT_EQ(read.name, config.name);
    EXPECT_EQ(read.sha256, config.sha256);
    EXPECT_EQ(read.model.features, config.model.features);
    EXPECT_EQ(read.model.loss, config.model.loss);
    EXPECT_EQ(read.optimizer.variant, config.optimizer.variant);
    EXPECT_EQ(read.optimizer.weight_decay, config.optimizer.weight_decay);
    EXPECT_EQ(read.seed, config.seed);
    ASSERT_EQ(read.backends.size(), 1u);  // the job's entry alone, with the job's options
    EXPECT_EQ(read.backends[0].name, config.backends[1].name);
    EXPECT_EQ(read.backends[0].device, config.backends[1].device);
    EXPECT_EQ(read.backends[0].options.at("threads"), "3");
    EXPECT_EQ(read.backends[0].options_in_force,
              (std::map<std::string, std::string>{{"threads", "3"}, {"math", "fp32"}}))
        << "the defaults the harness resolved, under the job's options";
    EXPECT_EQ(std::get<int>(read_job.backend), 0);
    EXPECT_EQ(read_job.overrides.iterations, 4);
    EXPECT_EQ(read_job.result_path, job.result_path);
    ASSERT_TRUE(read_job.capture);
    EXPECT_EQ(read_job.capture->dir, "/somewhere/capture");
    EXPECT_EQ(read_job.capture->anchor, "/somewhere/else");
    EXPECT_EQ(read_job.capture->anchored, 2);
    EXPECT_EQ(read_job.unit, 2);
    EXPECT_THROW(harness::run::job_from_json({{"config", 1}}), std::runtime_error);
}

// The config file is gone when the worker runs: it trains from its job file alone.
TEST(JobFile, TheWorkerNeverReadsTheConfig) {
    TempDir dir;
    const std::string yaml = dir / "gone.yaml";
    std::ofstream(yaml) << "model: {stacks: 1, features: 8, depth: 1, joints: 2, input_size: 16, "
                           "batch: 2}\nrun: {warmup: 0, iterations: 2}\n"
                           "backends:\n  - {plugin: reference, options: {threads: 1}}\n";
    const auto config = harness::config::load_config(yaml);
    fs::remove(yaml);
    harness::run::WorkerJob job;
    job.backend = 0;
    job.result_path = dir / "r.json";
    harness::run::write_job_file(dir / "job.json", config, job);
    const auto r = run_harness("__worker " + (dir / "job.json"));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const auto result = read_json(dir / "r.json");
    EXPECT_EQ(result["status"], "ok") << result["message"];
    EXPECT_EQ(result["samples_ms"].size(), 2u);
    EXPECT_EQ(result["options"]["threads"], "1");
}

}  // namespace
