// Every `harness run` compares the first-step losses of its backends: they start from the same
// weights and data, so a backend whose first loss disagrees computed another step.
#include "check/loss_agreement.hpp"
#include "harness_process.hpp"
#include "output/csv_reader.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace {

using harness::output::BackendRun;
using harness::output::Status;
using harness::testing::fake_plugins_env;
using harness::testing::run_harness;
using harness::testing::TempDir;

BackendRun run(const std::string& backend, double first_loss, const std::string& math_mode = "fp32",
               const std::string& plugin = "onednn") {
    BackendRun r;
    r.backend = backend;
    r.plugin = plugin;
    r.math = hb::math_from_string(math_mode);
    r.status = Status::ok;
    r.warmup_losses = {first_loss, first_loss / 2};
    r.losses = {first_loss / 3};
    return r;
}

std::map<std::string, std::string> agreement(std::vector<BackendRun> runs) {
    harness::check::annotate_loss_agreement(runs);
    std::map<std::string, std::string> out;
    for (const auto& r : runs) out[r.backend] = r.loss_agreement;
    return out;
}

TEST(LossAgreement, ARunOfTheOraclePluginIsTheYardstick) {
    std::vector<BackendRun> runs = {run("onednn", 2.0001), run("ref", 2.0, "fp32", "reference"),
                                    run("libtorch", 2.001), run("cudnn-bf16", 2.01, "bf16")};
    harness::check::annotate_loss_agreement(runs);
    EXPECT_EQ(runs[0].loss_agreement, "ok");         // 5e-5 relative, within float32's 1e-4
    EXPECT_EQ(runs[1].loss_agreement, "");           // the yardstick itself
    EXPECT_EQ(runs[2].loss_agreement, "disagrees");  // 5e-4
    EXPECT_EQ(runs[3].loss_agreement, "ok");         // 5e-3, within bfloat16's 3e-2
    EXPECT_EQ(runs[2].loss_agreement_detail,
              "first-step loss 2.001 against 2, the reference's (ref): relative difference "
              "0.0005, tolerance 0.0001");
}

TEST(LossAgreement, EvenAMajorityIsJudgedByTheOracle) {
    auto a = agreement({run("a", 1.0), run("ref", 1.5, "fp32", "reference"), run("b", 1.0)});
    EXPECT_EQ(a["a"], "disagrees");
    EXPECT_EQ(a["b"], "disagrees");
    EXPECT_EQ(a["ref"], "");
}

TEST(LossAgreement, OtherwiseTheMedianOfTheStrictestModeDecides) {
    auto a = agreement({run("a", 1.0), run("odd", 1.5), run("b", 1.0), run("bf16", 1.02, "bf16")});
    EXPECT_EQ(a["a"], "ok");
    EXPECT_EQ(a["b"], "ok");
    EXPECT_EQ(a["odd"], "disagrees");
    EXPECT_EQ(a["bf16"], "ok");  // 2e-2 from float32's median, within bfloat16's 3e-2

    // Two that disagree: either may be wrong, both are flagged.
    a = agreement({run("a", 1.0), run("b", 1.5)});
    EXPECT_EQ(a["a"], "disagrees");
    EXPECT_EQ(a["b"], "disagrees");

    // One float32 run is the yardstick of the reduced-precision ones, and is not judged itself.
    a = agreement({run("fp32", 1.0), run("tf32", 1.005, "tf32"), run("bf16", 1.2, "bf16")});
    EXPECT_EQ(a["fp32"], "");
    EXPECT_EQ(a["tf32"], "ok");
    EXPECT_EQ(a["bf16"], "disagrees");
}

TEST(LossAgreement, NothingToCompareLeavesItEmpty) {
    EXPECT_EQ(agreement({run("alone", 1.0)})["alone"], "");

    BackendRun failed = run("failed", 7.0);
    failed.status = Status::failed;
    BackendRun no_step = run("no_step", 1.0);
    no_step.warmup_losses.clear();
    no_step.losses.clear();
    auto a = agreement({run("a", 1.0), failed, no_step, run("b", 1.0)});
    EXPECT_EQ(a["a"], "ok");
    EXPECT_EQ(a["b"], "ok");
    EXPECT_EQ(a["failed"], "");
    EXPECT_EQ(a["no_step"], "");
}

TEST(LossAgreement, ANonFiniteFirstLossDisagreesAndIsNoYardstick) {
    auto a = agreement(
        {run("a", 1.0), run("nan", std::numeric_limits<double>::quiet_NaN()), run("b", 1.0)});
    EXPECT_EQ(a["a"], "ok");
    EXPECT_EQ(a["b"], "ok");
    EXPECT_EQ(a["nan"], "disagrees");
}

TEST(LossAgreement, AMismatchedRunIsComparedToo) {
    BackendRun mismatched = run("mismatched", 1.0);
    mismatched.status = Status::mismatch;
    EXPECT_EQ(agreement({run("a", 1.0), mismatched})["mismatched"], "ok");
}

std::map<std::string, harness::output::CsvRow> by_backend(const std::string& csv) {
    std::map<std::string, harness::output::CsvRow> rows;
    for (auto& row : harness::output::read_csv(csv)) rows[row["backend"]] = row;
    return rows;
}

TEST(HarnessRunLossAgreement, ABackendWhoseFirstLossDisagreesIsFlaggedWithNoCheckRecorded) {
    TempDir dir;
    const std::string env = fake_plugins_env() + " XDG_CACHE_HOME=" + (dir / "cache");
    const std::string config = std::string(HB_TEST_DATA_DIR) + "/disagreeing.yaml";
    auto r = run_harness("run " + config + " --output " + (dir / "all.csv"), env);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find("harness run: odd: first-step loss 2 against 1, the median of good, "
                            "odd, also_good (fp32)"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("odd: first-step loss disagrees"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(" 2!"), std::string::npos) << r.output;  // marked in the table
    auto rows = by_backend(dir / "all.csv");
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows["odd"]["status"], "ok");  // its timings are what they are
    EXPECT_EQ(rows["odd"]["check"], "");
    EXPECT_EQ(rows["odd"]["loss_agreement"], "disagrees");
    EXPECT_EQ(rows["good"]["loss_agreement"], "ok");
    EXPECT_EQ(rows["also_good"]["loss_agreement"], "ok");

    r = run_harness("run " + config + " --backends good,also_good --output " + (dir / "two.csv"),
                    env);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    rows = by_backend(dir / "two.csv");
    EXPECT_EQ(rows["good"]["loss_agreement"], "ok");
    EXPECT_EQ(rows["also_good"]["loss_agreement"], "ok");

    r = run_harness("run " + config + " --backends good --output " + (dir / "one.csv"), env);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(by_backend(dir / "one.csv")["good"]["loss_agreement"], "");
}

TEST(HarnessRunLossAgreement, BackendsThatAgreeWithEachOtherButNotTheYardstickAreFlagged) {
    TempDir dir;
    auto r = run_harness("run " + std::string(HB_TEST_DATA_DIR) + "/against_reference.yaml" +
                             " --output " + (dir / "out.csv"),
                         fake_plugins_env() + " XDG_CACHE_HOME=" + (dir / "cache"));
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find("harness run: good: first-step loss 1 against "), std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("the reference's (reference)"), std::string::npos) << r.output;
    auto rows = by_backend(dir / "out.csv");
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows["reference"]["loss_agreement"], "");
    EXPECT_EQ(rows["good"]["loss_agreement"], "disagrees");
    EXPECT_EQ(rows["also_good"]["loss_agreement"], "disagrees");
}

}  // namespace
