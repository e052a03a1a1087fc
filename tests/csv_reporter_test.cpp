#include "output/csv_reporter.hpp"
#include "output/csv_reader.hpp"
#include "output/run_json.hpp"
#include "results_samples.hpp"

#include <gtest/gtest.h>

namespace {

using namespace harness::testing;

class CsvReporter : public ResultsFiles {};

TEST_F(CsvReporter, HeaderHasEveryColumnInOrder) {
    report(harness::output::CsvReporter(path("r.csv")), provenance(), {});
    const std::string text = slurp(path("r.csv"));
    std::string expected;
    for (const std::string& c : harness::output::csv_columns())
        expected += (expected.empty() ? "" : ",") + c;
    EXPECT_EQ(text, expected + "\n");
    EXPECT_EQ(harness::output::csv_columns().front(), "schema_version");
    EXPECT_EQ(harness::output::csv_columns().back(),
              "bound_share");  // the newest, added at the end
    EXPECT_EQ(harness::output::csv_columns().size(), 64u);
}

// What an entry's `environment:` set is kept in its row and in the sidecar.
TEST_F(CsvReporter, TheEnvironmentAnEntrySetIsInItsRowAndItsSidecar) {
    auto run = full_run();
    run.environment = {{"TF_ENABLE_ONEDNN_OPTS", "0"}, {"OMP_PROC_BIND", "close"}};
    report(harness::output::CsvReporter(path("r.csv")), provenance(), {run, skipped_run()});
    const auto rows = harness::output::read_csv(path("r.csv"));
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].at("environment"), "OMP_PROC_BIND=close;TF_ENABLE_ONEDNN_OPTS=0");
    EXPECT_EQ(rows[1].at("environment"), "");
    EXPECT_EQ(harness::output::backend_run_from_json(harness::output::to_json(run)).environment,
              run.environment);
}

TEST_F(CsvReporter, RoundTrip) {
    report(harness::output::CsvReporter(path("r.csv")), provenance(), {full_run(), skipped_run()});
    const auto rows = harness::output::read_csv(path("r.csv"));
    ASSERT_EQ(rows.size(), 2u);
    for (const auto& row : rows) {
        ASSERT_EQ(row.size(), harness::output::csv_columns().size());
        for (const std::string& c : harness::output::csv_columns())
            EXPECT_EQ(row.count(c), 1u) << c;
    }

    const auto& ok = rows[0];
    EXPECT_EQ(ok.at("schema_version"), std::to_string(harness::output::kSchemaVersion));
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
    EXPECT_EQ(ok.at("cpu_ms"), "795.0000");
    EXPECT_EQ(ok.at("peak_memory_mb"), "3072.0");
    EXPECT_EQ(ok.at("flops_per_step"), "123456789012");
    EXPECT_EQ(ok.at("first_loss"), "3.14159265");
    EXPECT_EQ(ok.at("last_loss"), "2.6");
    EXPECT_EQ(ok.at("environment_warnings"),
              "cpu_scaling=powersave;gpu_clocks=sw_thermal_slowdown");
    EXPECT_EQ(ok.at("loss_agreement"), "ok");

    const auto& skipped = rows[1];
    EXPECT_EQ(skipped.at("status"), "skipped");
    EXPECT_EQ(skipped.at("message"), "no CUDA device");
    EXPECT_EQ(skipped.at("host"), "box");
    for (const char* c :
         {"setup_ms", "median_ms", "iqr_ms", "cv", "noisy", "images_per_s", "gflops", "forward_ms",
          "peak_memory_mb", "first_loss", "last_loss", "loss_agreement", "cpu_ms"}) {
        EXPECT_EQ(skipped.at(c), "") << c;
    }
}

// An entry's own placement wins over the config's; a run without one (read from a results file
// written before entries had their own) takes the config's.
TEST_F(CsvReporter, PlacementIsTheEntrysElseTheConfigs) {
    harness::output::BackendRun host = full_run();
    host.placement = "host";
    harness::output::BackendRun unknown = skipped_run();
    unknown.placement = "";
    report(harness::output::CsvReporter(path("r.csv")), provenance(), {host, unknown});
    const auto rows = harness::output::read_csv(path("r.csv"));
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].at("placement"), "host");
    EXPECT_EQ(rows[1].at("placement"), "device");
}

TEST_F(CsvReporter, QuotesCommasQuotesAndNewlines) {
    harness::output::BackendRun r = skipped_run();
    r.status = harness::output::Status::failed;
    r.message = "bad \"shape\", got 3\nexpected 4\r\nsee log";
    report(harness::output::CsvReporter(path("r.csv")), provenance(), {r});

    const std::string text = slurp(path("r.csv"));
    EXPECT_NE(text.find("\"bad \"\"shape\"\", got 3\nexpected 4\r\nsee log\""), std::string::npos)
        << text;
    EXPECT_NE(text.find("\"AMD EPYC 9654, 96-Core\""), std::string::npos);
    const auto rows = harness::output::read_csv(path("r.csv"));
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].at("message"), r.message);
    EXPECT_EQ(rows[0].at("status"), "failed");
}

TEST_F(CsvReporter, NonFiniteLossesAreSpelledOut) {
    harness::output::BackendRun r = full_run();
    r.warmup_losses.clear();
    r.losses = {-kInf, 1.0, kNaN};
    r.nonfinite_loss = true;
    report(harness::output::CsvReporter(path("r.csv")), provenance(), {r});
    const auto rows = harness::output::read_csv(path("r.csv"));
    EXPECT_EQ(rows[0].at("first_loss"), "-inf");
    EXPECT_EQ(rows[0].at("last_loss"), "nan");
    EXPECT_EQ(rows[0].at("nonfinite_loss"), "true");
}

TEST_F(CsvReporter, EnvironmentWarningsAreEmptyWhenNoneIsAWarning) {
    harness::output::Provenance p = provenance();
    for (auto& f : p.environment) f.warning = false;
    report(harness::output::CsvReporter(path("r.csv")), p, {skipped_run()});
    EXPECT_EQ(harness::output::read_csv(path("r.csv"))[0].at("environment_warnings"), "");
}

TEST_F(CsvReporter, CreatesParentDirectories) {
    report(harness::output::CsvReporter(path("a/b/r.csv")), provenance(), {skipped_run()});
    EXPECT_EQ(harness::output::read_csv(path("a/b/r.csv")).size(), 1u);
}

}  // namespace
