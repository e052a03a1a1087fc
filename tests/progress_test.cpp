// The progress line: the worker's step events, the line drawn from them, and what `harness run`
// and `harness check` show on a terminal (a pseudo-terminal here) and nowhere else.
#include "run/progress.hpp"
#include "harness_process.hpp"
#include "run/step_events.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace {

using harness::run::ProgressLine;
using harness::run::ProgressPlan;
using harness::run::StepEvent;
using harness::testing::CommandResult;
using harness::testing::run_harness;
using harness::testing::TempDir;

// `harness ARGUMENTS` with `environment` before it, its stdout and stderr a pseudo-terminal of
// 120 columns: everything it wrote there. Once its output holds `when`, `type` is typed on the
// terminal (Ctrl-C is "\x03").
CommandResult run_in_terminal(const std::string& arguments, const std::string& environment,
                              const std::string& when = "", const std::string& type = "") {
    CommandResult result;
    winsize size{};
    size.ws_row = 40;
    size.ws_col = 120;
    int terminal = -1;
    const pid_t pid = forkpty(&terminal, nullptr, nullptr, &size);
    if (pid < 0) return result;
    if (pid == 0) {
        const std::string command =
            "exec env " + environment + " " + harness::testing::harness_binary() + " " + arguments;
        execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    char buffer[4096];
    bool typed = type.empty();
    for (;;) {
        const ssize_t got = read(terminal, buffer, sizeof buffer);
        if (got > 0) {
            result.output.append(buffer, static_cast<size_t>(got));
            if (!typed && result.output.find(when) != std::string::npos)
                typed = write(terminal, type.data(), type.size()) ==
                        static_cast<ssize_t>(type.size());
            continue;
        }
        if (got < 0 && errno == EINTR) continue;
        break;  // EIO once the child and its children closed the terminal
    }
    close(terminal);
    int status = 0;
    waitpid(pid, &status, 0);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
}

// `text` without its colour sequences ("\033[1m", "\033[0m").
std::string without_colour(std::string text) {
    for (size_t at; (at = text.find("\033[")) != std::string::npos;) {
        const size_t end = text.find_first_of("mK", at);
        if (end == std::string::npos || text[end] == 'K') {
            text.replace(at, 2, "<CSI>");  // the line's erase sequences stay, marked
            continue;
        }
        text.erase(at, end + 1 - at);
    }
    return text;
}

const std::string kRun = "run " + std::string(HB_SOURCE_DIR) +
                         "/configs/check-tiny.yaml --backends reference,reference-host "
                         "--warmup 1 --iterations 3 --profile-steps 2 --output ";
const std::string kRewrite = "\r<CSI>K";

TEST(StepEvents, ALineReadsBackAsTheEvent) {
    const StepEvent e{"timed", 4, 20, 9843.25};
    const auto back = harness::run::parse_step_event(harness::run::to_line(e));
    ASSERT_TRUE(back);
    EXPECT_EQ(back->phase, "timed");
    EXPECT_EQ(back->done, 4);
    EXPECT_EQ(back->total, 20);
    EXPECT_DOUBLE_EQ(back->last_ms, 9843.25);
    for (const char* bad : {"", "timed", "timed 4 20", "timed 4 20 1 extra", "timed -1 20 1",
                            "timed four 20 1"})
        EXPECT_FALSE(harness::run::parse_step_event(bad)) << bad;
}

TEST(ProgressLine, SaysThePhaseTheTimesAndWhatIsLeft) {
    ProgressLine line(false);
    line.begin("tensorflow", ProgressPlan{2, 4, 1, 1e9, 2 * 7 * 1e9});
    EXPECT_EQ(line.text({"loading", 0, 0}), "tensorflow: loading");
    EXPECT_EQ(line.text({"warmup", 0, 2}), "tensorflow: first step (warm-up 1/2)");
    line.update({"warmup", 1, 2, 12000});
    EXPECT_EQ(line.text({"warmup", 1, 2, 12000}),
              "tensorflow: warm-up 1/2, last 12.0 s; 1 min 12 s left, all ~4 min 00 s (estimate)");
    line.update({"warmup", 2, 2, 2000});
    line.update({"timed", 1, 4, 1000});
    line.update({"timed", 2, 4, 3000});
    // 2 timed and 1 profiled step left at the median, 2.00 s; the 14 later steps at the 4.5 s
    // per GFLOP seen so far.
    EXPECT_EQ(line.text({"timed", 2, 4, 3000}),
              "tensorflow: timed 2/4, last 3.00 s, median 2.00 s; 6.00 s left, all ~1 min 09 s "
              "(estimate)");
    EXPECT_EQ(line.text({"profiling", 0, 1}),
              "tensorflow: profiling 0/1, last 3.00 s, median 2.00 s; 2.00 s left, all ~1 min 05 "
              "s (estimate)");
    line.begin("check", ProgressPlan{0, 2, 0, 0, 0});
    EXPECT_EQ(line.text({"capture", 0, 2}), "check: first step (of 2)");
    line.begin("layers", ProgressPlan{});
    EXPECT_EQ(line.text({"layers", 0, 9}), "layers: the whole step");
    EXPECT_EQ(line.text({"layers", 3, 9}), "layers: configuration 3 of 9");
}

TEST(ProgressLine, DurationsReadAtAGlance) {
    EXPECT_EQ(harness::run::duration_text(843), "0.84 s");
    EXPECT_EQ(harness::run::duration_text(12345), "12.3 s");
    EXPECT_EQ(harness::run::duration_text(160000), "2 min 40 s");
    EXPECT_EQ(harness::run::duration_text(3900000), "1 h 05 min");
}

TEST(ProgressLine, ATerminalSeesEachBackendsStepsAndThenItsRow) {
    TempDir dir;
    // A cache of its own: no recorded verdict comes between the line and the row's status.
    const auto raw =
        run_in_terminal(kRun + (dir / "r.csv"), "TERM=xterm XDG_CACHE_HOME=" + (dir / "cache"));
    ASSERT_EQ(raw.exit_code, 0) << raw.output;
    EXPECT_NE(raw.output.find("\033[1mreference\033[0m:"), std::string::npos);  // the name bold
    CommandResult r = raw;
    r.output = without_colour(raw.output);
    for (const char* seen : {"reference: loading", "reference: first step (warm-up 1/1)",
                             "reference: timed 3/3, last ", "reference: profiling 2/2",
                             "reference-host: timed 1/3"})
        EXPECT_NE(r.output.find(seen), std::string::npos) << seen << "\n" << r.output;
    EXPECT_NE(r.output.find(kRewrite), std::string::npos);
    EXPECT_NE(r.output.find(" left"), std::string::npos) << r.output;
    // Each backend's line is erased and its row's status line written in its place.
    EXPECT_NE(r.output.find(kRewrite + "      ok"), std::string::npos) << r.output;
}

// A run of rounds: the line names the round, and in the first round of one backend its estimate
// for the whole run counts the round still to come.
TEST(ProgressLine, ShowsTheRoundAndItsEstimateCoversTheRoundsToCome) {
    TempDir dir;
    const auto r = run_in_terminal(
        "run " + std::string(HB_SOURCE_DIR) +
            "/configs/check-tiny.yaml --backends reference --warmup 1 --iterations 3 --rounds 2 "
            "--interleave workers --output " +
            (dir / "r.csv"),
        "TERM=xterm NO_COLOR=1 XDG_CACHE_HOME=" + (dir / "cache"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const size_t second = r.output.find("[round 2/2, 1/1] reference");
    ASSERT_NE(second, std::string::npos) << r.output;
    const size_t timed = r.output.find("reference (round 1/2): timed 3/3");
    ASSERT_LT(timed, second) << r.output;
    EXPECT_LT(r.output.find(", all ~", timed), second) << r.output;
    EXPECT_NE(r.output.find("reference (round 2/2): timed 3/3", second), std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("rounds: 2, as planned"), std::string::npos) << r.output;

    // Paired steps: a worker's line until it waits for its first timed step, then one for the
    // round's steps.
    const auto paired = run_in_terminal(
        "run " + std::string(HB_SOURCE_DIR) +
            "/configs/check-tiny.yaml --backends reference,onednn --warmup 1 --iterations 3 "
            "--rounds 2 --output " +
            (dir / "p.csv"),
        "TERM=xterm NO_COLOR=1 XDG_CACHE_HOME=" + (dir / "cache"));
    ASSERT_EQ(paired.exit_code, 0) << paired.output;
    EXPECT_NE(paired.output.find("reference (round 1/2): first step"), std::string::npos)
        << paired.output;
    EXPECT_NE(paired.output.find("round 2, paired steps of 2 backends: timed 6/6"),
              std::string::npos)
        << paired.output;
}

TEST(ProgressLine, CheckShowsTheBaselineTheEnsembleAndEachBackend) {
    TempDir dir;
    const auto r = run_in_terminal("check " + std::string(HB_SOURCE_DIR) +
                                       "/configs/check-tiny.yaml --backends reference --steps 2",
                                   "TERM=xterm XDG_CACHE_HOME=" + (dir / "cache"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string seen_text = without_colour(r.output);
    for (const char* seen : {"baseline reference-fp64: step 1/2", "ensemble member 6 of 6: step",
                             "reference: step 2/2"})
        EXPECT_NE(seen_text.find(seen), std::string::npos) << seen << "\n" << seen_text;
}

TEST(ProgressLine, LayersShowsTheConfigurationItIsOn) {
    TempDir dir;
    const auto r = run_in_terminal("layers " + std::string(HB_SOURCE_DIR) +
                                       "/configs/check-tiny.yaml --backends reference "
                                       "--repetitions 1 --iterations 1 --output " +
                                       (dir / "l.csv"),
                                   "TERM=xterm NO_COLOR=1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    for (const char* seen : {"reference: the whole step", "reference: configuration 1 of ",
                             "reference: configuration 2 of "})
        EXPECT_NE(r.output.find(seen), std::string::npos) << seen << "\n" << r.output;
}

TEST(ProgressLine, NoneInAPipeADumbTerminalOrWithQuiet) {
    TempDir dir;
    const auto piped = run_harness(kRun + (dir / "a.csv"));
    ASSERT_EQ(piped.exit_code, 0) << piped.output;
    const auto dumb = run_in_terminal(kRun + (dir / "b.csv"), "TERM=dumb");
    ASSERT_EQ(dumb.exit_code, 0) << dumb.output;
    const auto quiet = run_in_terminal(kRun + (dir / "c.csv") + " --quiet", "TERM=xterm");
    ASSERT_EQ(quiet.exit_code, 0) << quiet.output;
    for (const CommandResult* r : {&piped, &dumb, &quiet}) {
        EXPECT_EQ(r->output.find("\033["), std::string::npos) << r->output;
        EXPECT_EQ(r->output.find("timed 1/3"), std::string::npos) << r->output;
        EXPECT_NE(r->output.find("      ok"), std::string::npos) << r->output;
    }
}

// Ctrl-C on the terminal stops the run as documented: the worker finishes its step and keeps
// the steps it completed, the line gives way to the row's.
TEST(ProgressLine, CtrlCStillStopsTheRunKeepingWhatItMeasured) {
    TempDir dir;
    const auto r = run_in_terminal(
        "run " + std::string(HB_TEST_DATA_DIR) + "/slow_interrupt.yaml --output " +
            (dir / "slow.csv"),
        std::string("TERM=xterm NO_COLOR=1 HARNESS_PLUGIN_PATH=") + HB_FAKE_PLUGIN_DIR,
        "slow: timed 3/200", "\x03");
    EXPECT_EQ(r.exit_code, 130) << r.output;
    EXPECT_NE(r.output.find("\r\033[K      interrupted: interrupted after "), std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("[2/2] never_started"), std::string::npos) << r.output;
}

TEST(ProgressLine, NoColorKeepsTheLineWithoutBold) {
    TempDir dir;
    const auto r = run_in_terminal(kRun + (dir / "r.csv"), "TERM=xterm NO_COLOR=1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("reference: timed 3/3"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("\033[1m"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("\r\033[K"), std::string::npos) << r.output;
}

}  // namespace
