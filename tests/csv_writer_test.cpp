#include "results/csv_writer.hpp"
#include "results/atomic_file.hpp"
#include "results/json_writer.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

namespace fs = std::filesystem;
namespace hr = harness::results;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

class ResultsFiles : public ::testing::Test {
protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = fs::temp_directory_path() /
               ("results_test." + std::to_string(::getpid()) + "." + info->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::string path(const std::string& name) const { return (dir_ / name).string(); }

    std::vector<std::string> entries() const {
        std::vector<std::string> names;
        for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename());
        return names;
    }

    fs::path dir_;
};

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

hr::Provenance provenance() {
    hr::Provenance p;
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
    return p;
}

hr::BackendRun full_run() {
    hr::BackendRun r;
    r.backend = "onednn";
    r.plugin = "onednn";
    r.plugin_version = "0.1.0";
    r.device = "cpu";
    r.options = {{"threads", "16"}, {"layout", "nChw16c"}};
    r.libraries = {{"dnnl", "3.5.3"}, {"openmp", "4.5"}};
    r.math_mode = "fp32";
    r.threads = 16;
    r.check = "pass";
    r.status = hr::Status::ok;
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
    r.peak_memory_bytes = 3u * 1024 * 1024 * 1024;
    r.manifest_json = R"({"convs":[{"algo":"winograd","name":"pre.conv"}],"layout":"nChw16c"})";
    r.stats = hr::compute_stats(r.samples_ms, r.batch, r.flops_per_step);
    return r;
}

hr::BackendRun skipped_run() {
    hr::BackendRun r;
    r.backend = "libtorch-cuda";
    r.plugin = "libtorch";
    r.device = "cuda:0";
    r.status = hr::Status::skipped;
    r.message = "no CUDA device";
    return r;
}

TEST_F(ResultsFiles, HeaderHasEveryColumnInOrder) {
    write_csv(path("r.csv"), provenance(), {});
    const std::string text = slurp(path("r.csv"));
    std::string expected;
    for (const std::string& c : hr::csv_columns()) expected += (expected.empty() ? "" : ",") + c;
    EXPECT_EQ(text, expected + "\n");
    EXPECT_EQ(hr::csv_columns().front(), "schema_version");
    EXPECT_EQ(hr::csv_columns().back(), "last_loss");
    EXPECT_EQ(hr::csv_columns().size(), 47u);
}

TEST_F(ResultsFiles, CsvRoundTrip) {
    hr::write_csv(path("r.csv"), provenance(), {full_run(), skipped_run()});
    const auto rows = hr::read_csv(path("r.csv"));
    ASSERT_EQ(rows.size(), 2u);
    for (const auto& row : rows) {
        ASSERT_EQ(row.size(), hr::csv_columns().size());
        for (const std::string& c : hr::csv_columns()) EXPECT_EQ(row.count(c), 1u) << c;
    }

    const auto& ok = rows[0];
    EXPECT_EQ(ok.at("schema_version"), std::to_string(hr::kSchemaVersion));
    EXPECT_EQ(ok.at("cpu_model"), "AMD EPYC 9654, 96-Core");
    EXPECT_EQ(ok.at("options"), "layout=nChw16c;threads=16");
    EXPECT_EQ(ok.at("libraries"), "dnnl=3.5.3;openmp=4.5");
    EXPECT_EQ(ok.at("threads"), "16");
    EXPECT_EQ(ok.at("placement"), "device");
    EXPECT_EQ(ok.at("seed"), "42");
    EXPECT_EQ(ok.at("batch"), "6");
    EXPECT_EQ(ok.at("status"), "ok");
    EXPECT_EQ(ok.at("check"), "pass");
    EXPECT_EQ(ok.at("nonfinite_loss"), "false");
    EXPECT_EQ(ok.at("warmup"), "2");
    EXPECT_EQ(ok.at("iterations"), "4");
    EXPECT_EQ(ok.at("setup_ms"), "1500.2500");
    EXPECT_EQ(ok.at("median_ms"), "402.5000");
    EXPECT_EQ(ok.at("min_ms"), "390.0000");
    EXPECT_EQ(ok.at("max_ms"), "410.0000");
    EXPECT_EQ(ok.at("noisy"), "false");
    EXPECT_DOUBLE_EQ(std::stod(ok.at("images_per_s")), std::round(6000.0 / 402.5 * 1000) / 1000);
    EXPECT_EQ(ok.at("forward_ms"), "115.0000");
    EXPECT_EQ(ok.at("backward_ms"), "207.5000");
    EXPECT_EQ(ok.at("optimizer_ms"), "11.5000");
    EXPECT_EQ(ok.at("peak_memory_mb"), "3072.0");
    EXPECT_EQ(ok.at("flops_per_step"), "123456789012");
    EXPECT_EQ(ok.at("first_loss"), "3.14159265");
    EXPECT_EQ(ok.at("last_loss"), "2.6");

    const auto& skipped = rows[1];
    EXPECT_EQ(skipped.at("status"), "skipped");
    EXPECT_EQ(skipped.at("message"), "no CUDA device");
    EXPECT_EQ(skipped.at("host"), "box");
    for (const char* c : {"setup_ms", "median_ms", "iqr_ms", "cv", "noisy", "images_per_s",
                          "gflops", "forward_ms", "peak_memory_mb", "first_loss", "last_loss"}) {
        EXPECT_EQ(skipped.at(c), "") << c;
    }
}

TEST_F(ResultsFiles, CsvQuotesCommasQuotesAndNewlines) {
    hr::BackendRun r = skipped_run();
    r.status = hr::Status::failed;
    r.message = "bad \"shape\", got 3\nexpected 4\r\nsee log";
    hr::write_csv(path("r.csv"), provenance(), {r});

    const std::string text = slurp(path("r.csv"));
    EXPECT_NE(text.find("\"bad \"\"shape\"\", got 3\nexpected 4\r\nsee log\""), std::string::npos)
        << text;
    EXPECT_NE(text.find("\"AMD EPYC 9654, 96-Core\""), std::string::npos);
    const auto rows = hr::read_csv(path("r.csv"));
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].at("message"), r.message);
    EXPECT_EQ(rows[0].at("status"), "failed");
}

TEST_F(ResultsFiles, NonFiniteLossesAreSpelledOut) {
    hr::BackendRun r = full_run();
    r.warmup_losses.clear();
    r.losses = {-kInf, 1.0, kNaN};
    r.nonfinite_loss = true;
    hr::write_csv(path("r.csv"), provenance(), {r});
    const auto rows = hr::read_csv(path("r.csv"));
    EXPECT_EQ(rows[0].at("first_loss"), "-inf");
    EXPECT_EQ(rows[0].at("last_loss"), "nan");
    EXPECT_EQ(rows[0].at("nonfinite_loss"), "true");
}

TEST_F(ResultsFiles, ReadCsvRejectsMalformedFiles) {
    const auto expect_throw = [&](const std::string& text) {
        std::ofstream(path("bad.csv"), std::ios::binary) << text;
        EXPECT_THROW(hr::read_csv(path("bad.csv")), std::runtime_error) << text;
    };
    expect_throw("");
    expect_throw("a,b\n1,2,3\n");
    expect_throw("a,b\n\"1,2\n");
    expect_throw("a,b\n\"1\"x,2\n");
    expect_throw("a,b\n1\"2,3\n");
    EXPECT_THROW(hr::read_csv(path("missing.csv")), std::runtime_error);

    std::ofstream(path("ok.csv"), std::ios::binary) << "a,b\r\n\"x\"\"y\",\r\n\"\",z";
    const auto rows = hr::read_csv(path("ok.csv"));
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].at("a"), "x\"y");
    EXPECT_EQ(rows[0].at("b"), "");
    EXPECT_EQ(rows[1].at("a"), "");
    EXPECT_EQ(rows[1].at("b"), "z");
}

TEST_F(ResultsFiles, AtomicWriteReplacesAndLeavesNoTemporary) {
    hr::write_file_atomically(path("out.txt"), "first");
    hr::write_file_atomically(path("out.txt"), "second");
    EXPECT_EQ(slurp(path("out.txt")), "second");
    EXPECT_EQ(entries(), std::vector<std::string>{"out.txt"});
}

TEST_F(ResultsFiles, AtomicWriteCreatesParentDirectories) {
    hr::write_csv(path("a/b/r.csv"), provenance(), {skipped_run()});
    EXPECT_EQ(hr::read_csv(path("a/b/r.csv")).size(), 1u);
}

TEST_F(ResultsFiles, UnwritablePathThrowsAndLeavesNothing) {
    std::ofstream(path("plain-file")) << "x";
    const std::string under_file = path("plain-file/r.csv");
    try {
        hr::write_file_atomically(under_file, "data");
        FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(under_file), std::string::npos) << e.what();
    }

    fs::create_directories(path("occupied/inside"));
    const std::string onto_dir = path("occupied");
    try {
        hr::write_file_atomically(onto_dir, "data");
        FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(onto_dir), std::string::npos) << e.what();
    }
    auto names = entries();
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"occupied", "plain-file"}));
    EXPECT_EQ(slurp(path("plain-file")), "x");
}

bool same(double a, double b) {
    return (std::isnan(a) && std::isnan(b)) || a == b;
}

void expect_same(const std::vector<double>& a, const std::vector<double>& b, const char* what) {
    ASSERT_EQ(a.size(), b.size()) << what;
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(same(a[i], b[i])) << what << "[" << i << "]";
}

void expect_same(const hr::BackendRun& a, const hr::BackendRun& b) {
    EXPECT_EQ(a.backend, b.backend);
    EXPECT_EQ(a.plugin, b.plugin);
    EXPECT_EQ(a.plugin_version, b.plugin_version);
    EXPECT_EQ(a.device, b.device);
    EXPECT_EQ(a.options, b.options);
    EXPECT_EQ(a.libraries, b.libraries);
    EXPECT_EQ(a.math_mode, b.math_mode);
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
    const hr::Stats& s = a.stats;
    const hr::Stats& t = b.stats;
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

TEST(Json, BackendRunRoundTripsThroughText) {
    hr::BackendRun r = full_run();
    r.status = hr::Status::mismatch;
    r.message = "grad pre.conv.weight: max rel err 3e-2";
    r.nonfinite_loss = true;
    r.warmup_losses = {kNaN, kInf};
    r.losses = {-kInf, 0.1, 1e-300, kNaN};
    r.samples_ms.push_back(kInf);
    r.stats.cv = kNaN;

    const nlohmann::json j = hr::to_json(r);
    EXPECT_TRUE(j.at("manifest").is_object());
    EXPECT_EQ(j.at("losses").at(0), "-inf");
    EXPECT_EQ(j.at("status"), "mismatch");
    const hr::BackendRun back = hr::backend_run_from_json(nlohmann::json::parse(j.dump()));
    expect_same(r, back);
}

TEST(Json, ManifestThatIsNotJsonStaysText) {
    for (const std::string& m : {std::string("algo=winograd; layout=NHWC"), std::string("{}"),
                                 std::string(""), std::string("\"quoted\"")}) {
        hr::BackendRun r = skipped_run();
        r.manifest_json = m;
        EXPECT_EQ(hr::backend_run_from_json(hr::to_json(r)).manifest_json, m);
    }
}

TEST(Json, RejectsUnknownStatusAndBadNumbers) {
    nlohmann::json j = hr::to_json(full_run());
    j["status"] = "great";
    EXPECT_THROW(hr::backend_run_from_json(j), nlohmann::json::exception);
    j = hr::to_json(full_run());
    j["losses"] = {"NaN?"};
    EXPECT_THROW(hr::backend_run_from_json(j), nlohmann::json::exception);
    j = hr::to_json(full_run());
    j.erase("samples_ms");
    EXPECT_THROW(hr::backend_run_from_json(j), nlohmann::json::exception);
}

TEST_F(ResultsFiles, JsonSidecarLayout) {
    hr::write_json(path("r.json"), provenance(), {full_run(), skipped_run()});
    const auto doc = nlohmann::json::parse(slurp(path("r.json")));
    EXPECT_EQ(doc.at("schema_version"), hr::kSchemaVersion);
    EXPECT_EQ(doc.at("provenance").at("config_path"), "configs/hourglass8.yaml");
    EXPECT_EQ(doc.at("provenance").at("seed"), 42);
    ASSERT_EQ(doc.at("runs").size(), 2u);
    expect_same(hr::backend_run_from_json(doc.at("runs").at(0)), full_run());
    EXPECT_EQ(doc.at("runs").at(1).at("message"), "no CUDA device");
    EXPECT_EQ(entries(), std::vector<std::string>{"r.json"});
}

}  // namespace
