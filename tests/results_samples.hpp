// Sample runs and a scratch folder for the tests of harness/results.
#pragma once

#include "output/record.hpp"
#include "output/reporter.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace harness::testing {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// A fresh folder per test, removed after it.
class ResultsFiles : public ::testing::Test {
protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = std::filesystem::temp_directory_path() /
               ("results_test." + std::to_string(::getpid()) + "." + info->test_suite_name() + "." +
                info->name());
        std::filesystem::remove_all(dir_);
        std::filesystem::create_directories(dir_);
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }

    std::string path(const std::string& name) const { return (dir_ / name).string(); }

    std::vector<std::string> entries() const {
        std::vector<std::string> names;
        for (const auto& e : std::filesystem::directory_iterator(dir_))
            names.push_back(e.path().filename());
        return names;
    }

    std::filesystem::path dir_;
};

inline std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline harness::output::Provenance provenance() {
    harness::output::Provenance p;
    p.utc_time = "2025-11-29T14:37:00Z";
    p.harness_version = "0.1.0";
    p.git_commit = "84e518b0abcd";
    p.config_name = "hourglass8";
    p.config_path = "configs/hourglass8.yaml";
    p.config_sha256 = std::string(64, 'a');
    p.host = "box";
    p.cpu_model = "AMD EPYC 9654, 96-Core";
    p.gpu_name = "NVIDIA H200";
    p.gpu_driver = "580.65";
    p.seed = 42;
    p.placement = "device";
    p.environment = {
        {"cpu_scaling", "powersave", "CPU frequency scaling is enabled (governor powersave)", true},
        {"load_average", "0.10", "load average 0.10 on 96 CPUs", false},
        {"gpu_clocks", "sw_thermal_slowdown", "GPU clocks are slowed down", true}};
    p.ceilings = {
        {16, {2.5e12, 2.4e12, 2.1e12, 7, "AVX-512"}, {2.0e11, 1.9e11, 1.8e11, 10, "triad"}}};
    p.step_cost = {{"conv2d",
                    378,
                    987022000000,
                    10329000000,
                    {"convolution forward", "convolution backward-data"}},
                   {"rmsprop", 0, 229000000, 509000000, {"optimizer"}}};
    return p;
}

inline harness::output::BackendRun full_run() {
    harness::output::BackendRun r;
    r.backend = "onednn";
    r.plugin = "onednn";
    r.plugin_version = "0.1.0";
    r.device = "cpu";
    r.placement = "device";
    r.options = {{"threads", "16"}, {"layout", "nChw16c"}};
    r.options_in_force = {{"threads", "16"}, {"layout", "nChw16c"}, {"batchnorm", "fused"}};
    r.bound_ms = 12.5;
    r.libraries = {{"dnnl", "3.5.3"}, {"openmp", "4.5"}};
    r.math = hb::Math::fp32;
    r.threads = 16;
    r.check = "pass";
    r.status = harness::output::Status::ok;
    r.message = "";
    r.warmup = 2;
    r.iterations = 4;
    r.batch = 6;
    r.flops_per_step = 123'456'789'012;
    r.setup_ms = 1500.25;
    r.warmup_ms = {900.5, 410.125};
    r.samples_ms = {400, 410, 390, 405};
    r.warmup_losses = {3.14159265358979, 3.0};
    r.losses = {2.9, 2.8, 2.7, 2.6};
    r.forward_ms = {100, 120, 110, 130};
    r.backward_ms = {200, 210, 205, 215};
    r.optimizer_ms = {10, 11, 12, 13};
    r.cpu_ms = {790, 800, 780, 830};
    r.peak_memory_bytes = 3u * 1024 * 1024 * 1024;
    r.manifest_json = R"({"convs":[{"algo":"winograd","name":"pre.conv"}],"layout":"nChw16c"})";
    r.stats = harness::output::compute_stats(r.samples_ms, r.batch, r.flops_per_step);
    r.loss_agreement = "ok";
    r.loss_agreement_detail = "first-step loss 3.14159265 agrees with 3.14159265, the reference's";
    return r;
}

inline harness::output::BackendRun skipped_run() {
    harness::output::BackendRun r;
    r.backend = "libtorch-cuda";
    r.plugin = "libtorch";
    r.device = "cuda:0";
    r.status = harness::output::Status::skipped;
    r.message = "no CUDA device";
    return r;
}

// Hands a reporter one invocation's runs, as the runner does: the context, the runs, finalize.
inline void report(harness::output::Reporter& reporter, const harness::output::Provenance& p,
                   const std::vector<harness::output::BackendRun>& runs) {
    reporter.report_context(p);
    reporter.report_runs(runs);
    reporter.finalize(runs);
}
inline void report(harness::output::Reporter&& reporter, const harness::output::Provenance& p,
                   const std::vector<harness::output::BackendRun>& runs) {
    report(reporter, p, runs);
}

inline bool same(double a, double b) {
    return (std::isnan(a) && std::isnan(b)) || a == b;
}

inline void expect_same(const std::vector<double>& a, const std::vector<double>& b,
                        const char* what) {
    ASSERT_EQ(a.size(), b.size()) << what;
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(same(a[i], b[i])) << what << "[" << i << "]";
}

inline void expect_same(const harness::output::BackendRun& a,
                        const harness::output::BackendRun& b) {
    EXPECT_EQ(a.backend, b.backend);
    EXPECT_EQ(a.plugin, b.plugin);
    EXPECT_EQ(a.plugin_version, b.plugin_version);
    EXPECT_EQ(a.device, b.device);
    EXPECT_EQ(a.placement, b.placement);
    EXPECT_EQ(a.options, b.options);
    EXPECT_EQ(a.options_in_force, b.options_in_force);
    EXPECT_EQ(a.bound_ms, b.bound_ms);
    EXPECT_EQ(a.libraries, b.libraries);
    EXPECT_EQ(a.math, b.math);
    EXPECT_EQ(a.threads, b.threads);
    EXPECT_EQ(a.check, b.check);
    EXPECT_EQ(a.status, b.status);
    EXPECT_EQ(a.message, b.message);
    EXPECT_EQ(a.nonfinite_loss, b.nonfinite_loss);
    EXPECT_EQ(a.warmup, b.warmup);
    EXPECT_EQ(a.iterations, b.iterations);
    EXPECT_EQ(a.batch, b.batch);
    EXPECT_EQ(a.flops_per_step, b.flops_per_step);
    EXPECT_TRUE(same(a.setup_ms, b.setup_ms));
    expect_same(a.warmup_ms, b.warmup_ms, "warmup_ms");
    expect_same(a.samples_ms, b.samples_ms, "samples_ms");
    expect_same(a.warmup_losses, b.warmup_losses, "warmup_losses");
    expect_same(a.losses, b.losses, "losses");
    expect_same(a.forward_ms, b.forward_ms, "forward_ms");
    expect_same(a.backward_ms, b.backward_ms, "backward_ms");
    expect_same(a.optimizer_ms, b.optimizer_ms, "optimizer_ms");
    EXPECT_EQ(a.peak_memory_bytes, b.peak_memory_bytes);
    EXPECT_EQ(a.manifest_json, b.manifest_json);
    EXPECT_EQ(a.loss_agreement, b.loss_agreement);
    EXPECT_EQ(a.loss_agreement_detail, b.loss_agreement_detail);
    EXPECT_EQ(a.log, b.log);
    EXPECT_EQ(a.cpu_ms, b.cpu_ms);
    const harness::output::Stats& s = a.stats;
    const harness::output::Stats& t = b.stats;
    for (auto [x, y] : {std::pair{s.median_ms, t.median_ms},
                        {s.mean_ms, t.mean_ms},
                        {s.stddev_ms, t.stddev_ms},
                        {s.min_ms, t.min_ms},
                        {s.max_ms, t.max_ms},
                        {s.p10_ms, t.p10_ms},
                        {s.p90_ms, t.p90_ms},
                        {s.iqr_ms, t.iqr_ms},
                        {s.cv, t.cv},
                        {s.images_per_s, t.images_per_s},
                        {s.gflops, t.gflops}}) {
        EXPECT_TRUE(same(x, y)) << x << " vs " << y;
    }
    EXPECT_EQ(s.noisy, t.noisy);
}

// n steps spread evenly over [center - half_width, center + half_width].
inline std::vector<double> evenly_spread(double center, double half_width, int n) {
    std::vector<double> v;
    for (int i = 0; i < n; ++i) v.push_back(center - half_width + 2 * half_width * i / (n - 1));
    return v;
}

}  // namespace harness::testing
