// results/ as a small database that `harness publish` keeps consistent: one run once, a row once,
// lines as the schema has them, a destination inside a results/ folder only, and every publish
// whole or not at all, even when it is killed at any write.
#include "harness_process.hpp"
#include "publish_fixture.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <string>

namespace {

namespace fs = std::filesystem;
using harness::testing::count;
using harness::testing::Publish;
using harness::testing::read_text;
using harness::testing::run_harness;
using harness::testing::write_text;

// A row published once: the same backend twice in one round, in the CSV and in its sidecar
// alike, is refused.
TEST_F(Publish, ABackendTwiceInARoundIsRefusedThoughItsSidecarAgrees) {
    const std::string csv = copy_run("checked");
    tamper(csv, [](auto& lines) { lines.push_back(lines[1]); });
    const std::string sidecar = dir_ / "in/tiny.json";
    auto j = nlohmann::json::parse(read_text(sidecar));
    j["runs"].push_back(j["runs"][0]);
    write_text(sidecar, j.dump(2));
    expect_refused(csv, {csv + " line 3 (backend reference-2threads), column backend: a second row "
                               "of it in round 1 (the first is line 2): a run has each backend once "
                               "a round"});
}

// A run published once: again under another name, in its folder or another, is refused, and the
// index keeps one line for it.
TEST_F(Publish, TheSameRunUnderAnotherNameIsRefused) {
    ASSERT_EQ(publish(copy_run("checked")).exit_code, 0);
    const std::string index = read_text(dir_.path() / "results/README.md");
    for (const std::string to : {"results/tiny", "results/again"}) {
        const auto r = run_harness("publish " + copy_run("checked", "renamed") + " --to " +
                                   (dir_ / to));
        EXPECT_EQ(r.exit_code, 2) << r.output;
        EXPECT_NE(r.output.find(dir_ / "results/tiny/tiny.csv" +
                                " holds a row of this run, every cell the same: a run is "
                                "published once, under one name, and a row once"),
                  std::string::npos)
            << r.output;
        EXPECT_EQ(read_text(dir_.path() / "results/README.md"), index);
    }
    EXPECT_FALSE(fs::exists(dir_.path() / "results/again"));
    EXPECT_FALSE(fs::exists(dir_.path() / "results/tiny/renamed.csv"));
}

// The schema's lines end in LF: a CSV with CR LF line ends is stored as harness run wrote it.
TEST_F(Publish, CrLfLineEndsArePublishedAsHarnessRunWritesThem) {
    const std::string csv = copy_run("checked");
    const std::string original = read_text(csv);
    std::string crlf;
    for (char c : original) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
    write_text(csv, crlf);
    const auto r = publish(csv);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("differs from what harness run writes in form only (CR LF line ends"),
              std::string::npos)
        << r.output;
    EXPECT_EQ(read_text(dir_.path() / "results/tiny/tiny.csv"), original);
}

// A destination is a folder of a results/ folder: not above it with `..`, not elsewhere.
TEST_F(Publish, TheDestinationIsAFolderOfAResultsFolderOnly) {
    const std::string csv = copy_run("checked");
    const std::map<std::string, std::string> refused{
        {"results/../elsewhere/results/x", "climbs with '..': give the folder to publish in as "
                                           "results/NAME"},
        {"results/tiny/../../x", "climbs with '..'"},
        {"other/x", "is not a folder of a results/ folder: publish in results/NAME"},
        {"results", "is not a folder of a results/ folder"},
    };
    for (const auto& [to, message] : refused) {
        const auto r = run_harness("publish " + csv + " --to " + (dir_ / to));
        EXPECT_EQ(r.exit_code, 2) << to << ": " << r.output;
        EXPECT_NE(r.output.find("--to: '" + (dir_ / to) + "' " + message), std::string::npos)
            << to << ": " << r.output;
    }
    for (const char* made : {"elsewhere", "x", "other", "results"})
        EXPECT_FALSE(fs::exists(dir_.path() / made)) << made;
}

// Every file under `root`, with its bytes.
std::map<std::string, std::string> snapshot(const fs::path& root) {
    std::map<std::string, std::string> files;
    if (!fs::exists(root)) return files;
    for (const auto& f : fs::recursive_directory_iterator(root))
        files[f.path().lexically_relative(root).string()] =
            f.is_directory() ? "(folder)" : read_text(f.path());
    return files;
}

// Publishing is atomic for the folder, its summary and the index together: killed at any call
// that changes the file system (each invocation of each, by strace's fault injection), results/
// is as it was before or as a whole publish leaves it, never between; the next publish clears
// what a killed one left beside it.
TEST_F(Publish, AKillAtAnyWriteLeavesResultsAsTheyWereOrAsPublished) {
    if (std::system("command -v strace >/dev/null 2>&1") != 0)
        GTEST_SKIP() << "strace is not installed (scripts/setup.sh installs it)";
    if (std::system("strace -qq -o /dev/null true >/dev/null 2>&1") != 0)
        GTEST_SKIP() << "strace cannot trace here (this test runs under a tracer already: "
                        "ptrace does not nest); .ci/run runs it in its sanitizer stage";
    ASSERT_EQ(publish(copy_run("checked")).exit_code, 0);
    const std::string second = copy_run("unchecked", "second");
    const fs::path results = dir_.path() / "results";
    const fs::path saved = dir_.path() / "saved/results";
    fs::create_directories(saved.parent_path());
    fs::copy(results, saved, fs::copy_options::recursive);
    const auto before = snapshot(results);
    const std::string command =
        "publish " + second + " --to " + (results / "tiny").string() + " --allow-unchecked";
    ASSERT_EQ(run_harness(command).exit_code, 0);
    const auto after = snapshot(results);
    ASSERT_NE(before, after);

    int killed = 0;
    for (const std::string call : {"mkdir", "unlink", "rmdir", "fchmodat", "link", "openat",
                                   "write", "rename", "renameat2", "unlinkat"}) {
        for (int n = 1;; ++n) {
            fs::remove_all(results);
            fs::copy(saved, results, fs::copy_options::recursive);
            const auto r = run_harness(command, "strace -f -qq -o /dev/null -e trace=" + call +
                                                    " -e inject=" + call +
                                                    ":signal=KILL:when=" + std::to_string(n));
            const auto now = snapshot(results);
            EXPECT_TRUE(now == before || now == after)
                << "killed at " << call << " " << n << ": " << r.output;
            if (r.exit_code != 128 + 9) {
                EXPECT_EQ(r.exit_code, 0) << call << " " << n << ": " << r.output;
                EXPECT_EQ(now, after) << call << " " << n;
                break;  // no invocation n: the publish ran to its end
            }
            ++killed;
            ASSERT_LT(n, 500) << call;
        }
    }
    EXPECT_GT(killed, 30);
}

}  // namespace
