#include "output/table_reporter.hpp"
#include "results_samples.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace {

using namespace harness::testing;

std::string table_of(const std::vector<harness::output::BackendRun>& runs) {
    std::ostringstream out;
    report(harness::output::TableReporter(out), provenance(), runs);
    return out.str();
}

harness::output::BackendRun ok_run(const std::string& name, std::vector<double> samples) {
    harness::output::BackendRun r;
    r.backend = name;
    r.device = "cpu";
    r.status = harness::output::Status::ok;
    r.batch = 6;
    r.flops_per_step = 1'000'000'000;
    r.samples_ms = std::move(samples);
    r.losses = {2.5, 2.25};
    r.stats = harness::output::compute_stats(r.samples_ms, r.batch, r.flops_per_step);
    return r;
}

TEST(Table, ListsEveryBackendAndWhyOneDidNotRun) {
    harness::output::BackendRun skipped;
    skipped.backend = "libtorch-cuda";
    skipped.device = "cuda:0";
    skipped.status = harness::output::Status::skipped;
    skipped.message = "no CUDA device";

    const std::string t = table_of({ok_run("reference", {10, 10, 10}), skipped});
    EXPECT_NE(t.find("median ms"), std::string::npos);
    EXPECT_NE(t.find("reference"), std::string::npos);
    EXPECT_NE(t.find("10.000"), std::string::npos);
    EXPECT_NE(t.find("600.0"), std::string::npos);  // images/s
    EXPECT_NE(t.find("CPU/wall"), std::string::npos) << t;
    EXPECT_NE(t.find("libtorch-cuda: skipped \u2014 no CUDA device"), std::string::npos) << t;
    EXPECT_EQ(t.find("reference: "), std::string::npos) << t;
}

// Two threads busy through the step: CPU time twice the wall time.
TEST(Table, ShowsTheWorkersCpuTimeOverTheWallTime) {
    harness::output::BackendRun busy = ok_run("busy", {10, 10, 10});
    busy.cpu_ms = {19, 20, 21};
    const std::string t = table_of({busy, ok_run("unmeasured", {10, 10, 10})});
    const std::string busy_row = t.substr(t.find("busy"), t.find('\n', t.find("busy")) - t.find("busy"));
    EXPECT_NE(busy_row.find("  2.00  "), std::string::npos) << t;
    const std::string other = t.substr(t.find("unmeasured"));
    EXPECT_NE(other.find("  -  "), std::string::npos) << t;
}

TEST(Table, FlagsNoiseAndNonFiniteLoss) {
    harness::output::BackendRun noisy = ok_run("onednn", {88, 94, 100, 106, 112});
    harness::output::BackendRun diverged = ok_run("cudnn", {5, 5, 5});
    diverged.losses = {1.0, kInf, kNaN};
    diverged.nonfinite_loss = true;

    const std::string t = table_of({noisy, diverged});
    EXPECT_NE(t.find("onednn: noisy, IQR/median 12%"), std::string::npos) << t;
    EXPECT_NE(t.find("cudnn: non-finite loss"), std::string::npos) << t;
    EXPECT_NE(t.find("nan"), std::string::npos) << t;
}

TEST(Table, FlagsADisagreeingFirstLossAndAStaleCheck) {
    harness::output::BackendRun odd = ok_run("odd", {5, 5, 5});
    odd.loss_agreement = "disagrees";
    odd.loss_agreement_detail = "first-step loss 2.5 against 1, the reference's (reference)";
    harness::output::BackendRun stale = ok_run("stale", {5, 5, 5});
    stale.check = "stale";
    stale.loss_agreement = "ok";

    const std::string t = table_of({odd, stale});
    EXPECT_NE(t.find(" 2.5!  "), std::string::npos) << t;
    EXPECT_EQ(t.find("2.5!"), t.rfind("2.5!")) << t;  // only odd's is marked
    EXPECT_NE(t.find("odd: first-step loss disagrees \u2014 first-step loss 2.5 against 1, the "
                     "reference's (reference)"),
              std::string::npos)
        << t;
    EXPECT_NE(t.find("stale: check stale \u2014 the last harness check of this config was of "
                     "another build"),
              std::string::npos)
        << t;
    EXPECT_EQ(t.find("stale: first-step"), std::string::npos) << t;
}

TEST(Table, EnvironmentWarningsComeUnderTheTable) {
    const std::string t = table_of({ok_run("reference", {10, 10, 10})});
    const std::string warnings =
        "\n***WARNING*** CPU frequency scaling is enabled (governor powersave)\n"
        "***WARNING*** GPU clocks are slowed down\n";
    ASSERT_GE(t.size(), warnings.size());
    EXPECT_EQ(t.substr(t.size() - warnings.size()), warnings) << t;
    EXPECT_EQ(t.find("load average"), std::string::npos) << t;  // no warning, not shown

    std::ostringstream out;
    harness::output::Provenance quiet = provenance();
    quiet.environment.clear();
    report(harness::output::TableReporter(out), quiet, {ok_run("reference", {10, 10, 10})});
    EXPECT_EQ(out.str().find("WARNING"), std::string::npos) << out.str();
}

TEST(Table, ColumnsAreAligned) {
    const std::string t =
        table_of({ok_run("a", {1, 1}), ok_run("a-much-longer-name", {1234.5, 1234.5})});
    std::vector<std::string> lines;
    size_t start = 0;
    for (size_t nl = t.find('\n'); nl != std::string::npos; nl = t.find('\n', start)) {
        lines.push_back(t.substr(start, nl - start));
        start = nl + 1;
    }
    ASSERT_GE(lines.size(), 4u);
    const size_t col = lines[0].find("device");
    for (size_t i = 2; i < 4; ++i) EXPECT_EQ(lines[i].find("cpu"), col) << t;
    for (size_t i = 1; i < 4; ++i) EXPECT_EQ(lines[i].size(), lines[0].size()) << t;
}

}  // namespace

namespace {

// Three rounds of a baseline and of a backend 1.5 times slower whose first timed step is the
// slowest of each round.
std::vector<harness::output::BackendRun> three_rounds() {
    std::vector<harness::output::BackendRun> runs;
    for (int round = 1; round <= 3; ++round) {  // (1/5)^3 < 1/100
        const double scale = 1 + 0.01 * round;
        auto base = ok_run("base", {100 * scale, 101 * scale, 99 * scale, 100 * scale, 100 * scale});
        auto slow =
            ok_run("slow", {152 * scale, 150 * scale, 151 * scale, 149 * scale, 150 * scale});
        base.round = slow.round = round;
        runs.push_back(round == 2 ? slow : base);
        runs.push_back(round == 2 ? base : slow);
    }
    return runs;
}

std::string table_of(const std::vector<harness::output::BackendRun>& runs,
                     const harness::output::RoundPlan& plan) {
    std::ostringstream out;
    harness::output::Provenance p = provenance();
    p.rounds = plan;
    report(harness::output::TableReporter(out), p, runs);
    return out.str();
}

}  // namespace

TEST(Table, ABackendsRoundsAreOneLineWithItsRatioOverThem) {
    const std::string t = table_of(three_rounds(), {3, 3, 0, 0, "base", "max_rounds"});
    EXPECT_EQ(t.find("slow"), t.rfind("slow  ")) << t;  // one line
    EXPECT_NE(t.find("  rounds  "), std::string::npos) << t;
    EXPECT_NE(t.find("  vs base\n"), std::string::npos) << t;
    EXPECT_NE(t.find("baseline"), std::string::npos) << t;
    // Every round's ratio is 1.5: the interval over them is 1.5 give or take what the spread of
    // the steps within each round leaves in its figure.
    EXPECT_NE(t.find("1.500x [1.483, 1.517]"), std::string::npos) << t;
    EXPECT_EQ(t.find("within"), std::string::npos) << t;  // no target
    EXPECT_NE(t.find("slow: its first timed step was the slowest of its round in every round"),
              std::string::npos)
        << t;
    EXPECT_EQ(t.find("base: its first"), std::string::npos) << t;
}

TEST(Table, SaysWhetherEachBackendReachedTheTargetOrWhatStoppedIt) {
    const std::string t = table_of(three_rounds(), {3, 9, 0.02, 60, "base", "target"});
    EXPECT_NE(t.find("within ±2%"), std::string::npos) << t;
    EXPECT_NE(t.find("  yes"), std::string::npos) << t;

    auto runs = three_rounds();
    runs[0].samples_ms = {130, 131, 129, 130};  // round 1's base: the rounds now disagree
    const std::string budget = table_of(runs, {3, 9, 0.02, 60, "base", "budget"});
    EXPECT_NE(budget.find("no: budget spent"), std::string::npos) << budget;
    // Without a baseline among the runs, no comparison columns.
    const std::string none = table_of(runs, {3, 9, 0.02, 60, "nobody", "budget"});
    EXPECT_EQ(none.find("rounds"), std::string::npos) << none;
}
