// Every way a run ends leaves no scratch folder ($TMPDIR/harness-*) behind and keeps the rows it
// measured: an interrupt, a closed terminal (SIGHUP to the process group), SIGTERM, a worker's
// crash; a harness killed outright leaves its folder to the next command, which removes it.
#include "harness_process.hpp"
#include "output/csv_reader.hpp"
#include "plugin_host/scratch_dir.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <stdlib.h>

#include <cstdlib>

#include <filesystem>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using harness::testing::fake_plugins_env;
using harness::testing::run_harness;
using harness::testing::TempDir;

std::vector<std::string> scratch_in(const fs::path& temp) {
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(temp))
        if (entry.path().filename().string().rfind("harness", 0) == 0)
            found.push_back(entry.path().string());
    return found;
}

std::string data(const std::string& name) {
    return std::string(HB_TEST_DATA_DIR) + "/" + name;
}

// The harness started in a process group of its own, sent `signal` after 3 s (to the whole group
// when `group`, as a closing terminal does), its scratch under `temp`.
harness::testing::CommandResult signalled_run(const std::string& arguments, const fs::path& temp,
                                              const std::string& signal, bool group) {
    const std::string target = group ? "0" : "$p";
    return run_harness(arguments, fake_plugins_env() + " TMPDIR=" + temp.string() +
                                      " setsid -w sh -c '\"$0\" \"$@\" & p=$!; trap \"\" " +
                                      signal + "; sleep 3; kill -" + signal + " " + target +
                                      "; wait $p'");
}

TEST(Cleanup, EveryWayARunEndsKeepsItsRowsAndLeavesNoScratch) {
    for (const auto& [signal, group] : std::vector<std::pair<std::string, bool>>{
             {"HUP", true}, {"INT", false}, {"TERM", false}, {"TERM", true}}) {
        TempDir dir;
        fs::create_directories(dir / "tmp");
        const std::string csv = dir / "slow.csv";
        const auto r = signalled_run("run " + data("slow_interrupt.yaml") + " --output " + csv,
                                     dir / "tmp", signal, group);
        const std::string what = "SIG" + signal + (group ? " to the group" : "");
        EXPECT_EQ(r.exit_code, 130) << what << ": " << r.output;
        const auto rows = harness::output::read_csv(csv);
        ASSERT_EQ(rows.size(), 1u) << what << ": " << r.output;
        EXPECT_EQ(rows[0].at("status"), "interrupted") << what;
        EXPECT_FALSE(rows[0].at("median_ms").empty()) << what;  // the steps it measured
        EXPECT_EQ(scratch_in(dir / "tmp"), std::vector<std::string>{}) << what;
    }
}

TEST(Cleanup, AWorkerThatCrashesLeavesNoScratch) {
    TempDir dir;
    fs::create_directories(dir / "tmp");
    const auto r = run_harness("run " + data("fakes.yaml") + " --backends good,crashes --output " +
                                   (dir / "f.csv"),
                               fake_plugins_env() + " TMPDIR=" + (dir / "tmp"));
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_EQ(harness::output::read_csv(dir / "f.csv").size(), 2u) << r.output;
    EXPECT_EQ(scratch_in(dir / "tmp"), std::vector<std::string>{});
}

// SIGKILL gives the harness no chance to remove its folder; the next command that makes one finds
// that its owner is gone and removes it, and leaves a living command's folder alone.
TEST(Cleanup, AKilledHarnessesScratchIsRemovedByTheNextCommand) {
    TempDir dir;
    fs::create_directories(dir / "tmp");
    const auto killed = signalled_run("run " + data("interrupt.yaml") + " --output " +
                                          (dir / "k.csv"),
                                      dir / "tmp", "KILL", false);
    EXPECT_EQ(killed.exit_code, 128 + 9) << killed.output;
    const auto left = scratch_in(dir / "tmp");
    ASSERT_EQ(left.size(), 1u) << killed.output;
    EXPECT_TRUE(fs::exists(fs::path(left[0]) / ".owner"));

    const auto r = run_harness("run " + data("fakes.yaml") + " --backends good --output " +
                                   (dir / "g.csv"),
                               fake_plugins_env() + " TMPDIR=" + (dir / "tmp"));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(scratch_in(dir / "tmp"), std::vector<std::string>{});

    const char* before = std::getenv("TMPDIR");
    const std::string saved = before ? before : "";
    setenv("TMPDIR", (dir / "tmp").c_str(), 1);
    {
        const harness::plugin_host::ScratchDir living("harness-living");
        EXPECT_EQ(harness::plugin_host::remove_stale_scratch(dir / "tmp"), 0);
        EXPECT_EQ(scratch_in(dir / "tmp"), std::vector<std::string>{living.path().string()});
    }
    if (before)
        setenv("TMPDIR", saved.c_str(), 1);
    else
        unsetenv("TMPDIR");
    EXPECT_EQ(scratch_in(dir / "tmp"), std::vector<std::string>{});
}

}  // namespace
