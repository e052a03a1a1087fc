// Recorded verdicts of `harness check`: kept in one absolute place, and holding only for the build
// of the plugin and the library versions that were checked.
#include "check/check_record.hpp"
#include "harness_process.hpp"
#include "output/csv_reader.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace {

namespace fs = std::filesystem;
using harness::check::BuildIdentity;
using harness::check::Verdict;
using harness::testing::run_harness;
using harness::testing::TempDir;

// Sets an environment variable for the scope, and puts back what was there.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        if (value)
            setenv(name, value, 1);
        else
            unsetenv(name);
    }
    ~ScopedEnv() {
        if (old_)
            setenv(name_, old_->c_str(), 1);
        else
            unsetenv(name_);
    }

private:
    const char* name_;
    std::optional<std::string> old_;
};

BuildIdentity build() {
    return {std::string(64, 'a'), "0.3.0", {{"dnnl", "3.2.0"}, {"openmp", "4.5"}}};
}

Verdict verdict(const std::string& backend, const std::string& outcome) {
    return {backend, "fp32", outcome, "reference", "2026-11-30T12:00:00Z", build()};
}

TEST(Verdicts, HoldForTheBuildThatWasChecked) {
    EXPECT_EQ(harness::check::verdict_for(verdict("onednn", "pass"), build()), "pass");
    EXPECT_EQ(harness::check::verdict_for(verdict("onednn", "mismatch"), build()), "mismatch");

    BuildIdentity rebuilt = build();
    rebuilt.plugin_sha256 = std::string(64, 'b');
    EXPECT_EQ(harness::check::verdict_for(verdict("onednn", "pass"), rebuilt), "stale");
    BuildIdentity newer = build();
    newer.plugin_version = "0.4.0";
    EXPECT_EQ(harness::check::verdict_for(verdict("onednn", "pass"), newer), "stale");
    BuildIdentity other_library = build();
    other_library.libraries["dnnl"] = "3.5.3";
    EXPECT_EQ(harness::check::verdict_for(verdict("onednn", "mismatch"), other_library), "stale");
    // A verdict recorded without a build (by an older harness) holds for none.
    Verdict unknown = verdict("onednn", "pass");
    unknown.build = {};
    EXPECT_EQ(harness::check::verdict_for(unknown, build()), "stale");
}

TEST(Verdicts, SayWhatChangedSinceTheCheck) {
    BuildIdentity now = build();
    now.plugin_sha256 = "cd" + std::string(62, '0');
    now.libraries["dnnl"] = "3.5.3";
    now.libraries.erase("openmp");
    EXPECT_EQ(harness::check::identity_change("onednn", build(), now),
              "the plugin file hb_onednn.so (SHA-256 aaaaaaaaaaaa... then, SHA-256 cd0000000000... "
              "now); the library dnnl (3.2.0 then, 3.5.3 now); the library openmp (4.5 then, none "
              "now)");
    EXPECT_EQ(harness::check::identity_change("onednn", build(), build()), "");
}

TEST(Verdicts, AreRecordedWithTheirBuildAndReplacedByBackendAndMathMode) {
    TempDir dir;
    const std::string path = dir / "deep/folder/check-0123456789abcdef.json";
    harness::check::record_verdicts(path,
                                    {verdict("onednn", "mismatch"), verdict("libtorch", "pass")});
    Verdict fixed = verdict("onednn", "pass");
    fixed.build.plugin_sha256 = std::string(64, 'c');
    harness::check::record_verdicts(path, {fixed});

    const auto all = harness::check::read_verdicts(path);
    ASSERT_EQ(all.size(), 2u);
    auto onednn = harness::check::find_verdict(all, "onednn", "fp32");
    ASSERT_TRUE(onednn);
    EXPECT_EQ(onednn->verdict, "pass");
    EXPECT_EQ(onednn->build, fixed.build);
    auto libtorch = harness::check::find_verdict(all, "libtorch", "fp32");
    ASSERT_TRUE(libtorch);
    EXPECT_EQ(libtorch->build, build());
    EXPECT_FALSE(harness::check::find_verdict(all, "libtorch", "tf32"));
}

TEST(Verdicts, LiveInTheUsersCacheFolderWhereverTheRunStarts) {
    {
        ScopedEnv xdg("XDG_CACHE_HOME", "/some/cache");
        EXPECT_EQ(harness::check::verdicts_dir(), "/some/cache/harness/checks");
    }
    ScopedEnv home("HOME", "/home/someone");
    {
        ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
        EXPECT_EQ(harness::check::verdicts_dir(), "/home/someone/.cache/harness/checks");
    }
    {
        ScopedEnv xdg("XDG_CACHE_HOME", "relative/cache");  // not absolute: ignored, as XDG says
        EXPECT_EQ(harness::check::verdicts_dir(), "/home/someone/.cache/harness/checks");
    }
}

// `harness check` in one folder, `harness run` in another, with a copy of a plugin that can be
// "rebuilt": the verdict is found, and once the plugin file changed it is stale.
TEST(HarnessRunVerdicts, AVerdictIsFoundFromAnyFolderAndIsStaleOnceThePluginChanged) {
    TempDir dir;
    for (const char* d : {"plugins", "checked_here", "run_here"}) fs::create_directories(dir / d);
    const std::string plugin = dir / "plugins/hb_fake_perturbed.so";
    fs::copy_file(std::string(HB_FAKE_PLUGIN_DIR) + "/hb_fake_perturbed.so", plugin);
    const std::string env =
        "XDG_CACHE_HOME=" + (dir / "cache") + " HARNESS_PLUGIN_PATH=" + (dir / "plugins") + " ";
    const std::string config = std::string(HB_TEST_DATA_DIR) + "/perturbed.yaml";

    auto check = run_harness("check " + config, "cd " + (dir / "checked_here") + " && " + env);
    ASSERT_EQ(check.exit_code, 1) << check.output;  // the perturbed backend mismatches
    EXPECT_FALSE(fs::exists(dir / "checked_here/runs")) << "verdicts are not kept in the cwd";
    ASSERT_FALSE(fs::is_empty(dir / "cache/harness/checks"));

    const std::string run_env = "cd " + (dir / "run_here") + " && " + env;
    auto run = run_harness("run " + config + " --output " + (dir / "before.csv"), run_env);
    EXPECT_EQ(run.exit_code, 1) << run.output;
    auto rows = harness::output::read_csv(dir / "before.csv");
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[1]["check"], "mismatch");
    EXPECT_EQ(rows[1]["status"], "mismatch");

    // A rebuilt plugin: another file (trailing bytes leave an ELF file loadable).
    std::ofstream(plugin, std::ios::app | std::ios::binary) << "rebuilt";
    run = run_harness("run " + config + " --output " + (dir / "after.csv"), run_env);
    EXPECT_EQ(run.exit_code, 0) << run.output;
    rows = harness::output::read_csv(dir / "after.csv");
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[1]["check"], "stale");
    EXPECT_EQ(rows[1]["status"], "ok");
    EXPECT_NE(run.output.find("check stale: mismatch"), std::string::npos) << run.output;
    EXPECT_NE(run.output.find("the plugin file hb_fake_perturbed.so"), std::string::npos)
        << run.output;
    EXPECT_NE(run.output.find("perturbed: check stale"), std::string::npos) << run.output;
}

}  // namespace
