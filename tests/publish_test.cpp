// `harness publish` from the outside: a real run of configs/tiny.yaml (made once, by PublishRuns),
// checked first so that its row is `pass`, published and indexed; the same files tampered with,
// refused with nothing written. The config's entry is renamed so that `harness check` compares it
// with the reference plugin as a baseline of its own (an entry that is the baseline is not
// checked).
#include "publish/publish.hpp"
#include "publish_fixture.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

namespace {

namespace fs = std::filesystem;
using harness::testing::count;
using harness::testing::Publish;
using harness::testing::read_text;
using harness::testing::run_harness;
using harness::testing::runs_dir;
using harness::testing::shipped_config;
using harness::testing::write_text;

// The runs, made once: CTest runs this first (the fixture publish_runs, tests/CMakeLists.txt).
TEST(PublishRuns, AreMadeOnceForEveryPublishTest) {
    const fs::path runs = runs_dir();
    fs::remove_all(runs);
    fs::create_directories(runs);
    std::string tiny = read_text(shipped_config("tiny.yaml"));
    const std::string entry = "  - plugin: reference\n";
    ASSERT_NE(tiny.find(entry), std::string::npos);
    tiny.replace(tiny.find(entry), entry.size(),
                 "  - name: reference-2threads\n    plugin: reference\n");
    const std::string yaml = runs / "tiny.yaml";
    write_text(yaml, tiny);
    const std::string checked_env = "XDG_CACHE_HOME=" + (runs / "cache").string();
    const auto check = run_harness("check " + yaml, checked_env);
    ASSERT_EQ(check.exit_code, 0) << check.output;
    const auto run = run_harness(
        "run " + yaml + " --output " + (runs / "checked/tiny.csv").string(), checked_env);
    ASSERT_EQ(run.exit_code, 0) << run.output;
    const auto unchecked =
        run_harness("run " + yaml + " --output " + (runs / "unchecked/tiny.csv").string(),
                    "XDG_CACHE_HOME=" + (runs / "empty-cache").string());
    ASSERT_EQ(unchecked.exit_code, 0) << unchecked.output;
}

const std::string kLine =
    "| [tiny/](tiny/summary.md) `tiny.csv` | tiny (backends: reference-2threads) |";

TEST_F(Publish, ACheckedRunIsCopiedSummarisedAndIndexedOnceEvenWhenPublishedAgain) {
    const std::string csv = copy_run("checked");
    auto r = publish(csv);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const fs::path folder = dir_.path() / "results/tiny";
    EXPECT_EQ(read_text(folder / "tiny.csv"), read_text(csv));
    EXPECT_EQ(read_text(folder / "tiny.json"), read_text(dir_ / "in/tiny.json"));
    const std::string summary = read_text(folder / "summary.md");
    EXPECT_EQ(summary.rfind(harness::publish::kSummaryMark, 0), 0u) << summary;
    EXPECT_NE(summary.find("`tiny.csv`"), std::string::npos) << summary;
    EXPECT_NE(summary.find("| reference-2threads |"), std::string::npos) << summary;
    std::string index = read_text(dir_.path() / "results/README.md");
    EXPECT_NE(index.find(harness::publish::kIndexHeader), std::string::npos) << index;
    EXPECT_EQ(count(index, kLine), 1u) << index;
    EXPECT_NE(index.find("each backend's time per training step"), std::string::npos) << index;
    EXPECT_EQ(index.find("unchecked"), std::string::npos) << index;

    r = publish(csv, "--what 'the tiny config, once more'");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    index = read_text(dir_.path() / "results/README.md");
    EXPECT_EQ(count(index, kLine), 1u) << index;
    EXPECT_NE(index.find("| the tiny config, once more |"), std::string::npos) << index;
    EXPECT_EQ(index.find("each backend's time per training step"), std::string::npos) << index;

    // A second run in the same folder: its own line, and both in the summary.
    r = publish(copy_run("unchecked", "tiny-2"), "--allow-unchecked");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    index = read_text(dir_.path() / "results/README.md");
    EXPECT_EQ(count(index, kLine), 1u) << index;
    EXPECT_EQ(count(index, "| [tiny/](tiny/summary.md) `tiny-2.csv` |"), 1u) << index;
    EXPECT_NE(r.output.find("published tiny-2.csv"), std::string::npos) << r.output;
    EXPECT_NE(read_text(folder / "summary.md").find("`tiny-2.csv`, `tiny.csv`"), std::string::npos);
}

TEST_F(Publish, AnExistingIndexKeepsItsLinesAndGainsOneInItsTable) {
    fs::create_directories(dir_.path() / "results");
    const std::string original = read_text(std::string(HB_SOURCE_DIR) + "/results/README.md");
    write_text(dir_.path() / "results/README.md", original);
    ASSERT_EQ(publish(copy_run("checked")).exit_code, 0);
    const std::string index = read_text(dir_.path() / "results/README.md");
    ASSERT_EQ(index.rfind(original, 0), 0u) << index;  // the table ends the file
    EXPECT_EQ(index.substr(original.size()).rfind(kLine, 0), 0u) << index;
}

TEST_F(Publish, AChangedMedianIsRefusedAgainstTheSidecarsSamples) {
    const std::string csv = copy_run("checked");
    tamper(csv, [](auto& lines) { set(lines, "median_ms", "0.0001"); });
    expect_refused(csv,
                   {csv + " line 2 (backend reference-2threads), column median_ms: 0.0001, but the "
                          "median of the 5 samples_ms in the sidecar"});
}

// Every cell is confirmed against the sidecar, which the CSV's own cells cannot vouch for: a
// never-checked run whose check cell says `pass`, a figure edited alone, a file cut short.
TEST_F(Publish, ACellEditedAloneOrAFileCutShortIsRefusedAgainstTheSidecar) {
    std::string csv = copy_run("unchecked");
    tamper(csv, [](auto& lines) { set(lines, "check", "pass"); });
    expect_refused(csv, {"line 2 (backend reference-2threads), column check: 'pass', but the "
                         "sidecar " +
                         (dir_ / "in/tiny.json") + " says ''"});

    csv = copy_run("checked");
    tamper(csv, [](auto& lines) { set(lines, "p90_ms", "0.0002"); });
    expect_refused(csv, {"column p90_ms: '0.0002', but the sidecar"});

    csv = copy_run("checked");
    std::string text = read_text(csv);
    write_text(csv, text.substr(0, text.rfind(',')));
    expect_refused(csv, {"malformed CSV " + csv +
                         " (line 2): row 1 has 63 fields, header has 64 "
                         "(the file's end is cut short)"});
    // Cut where a row still has every field: the line break, a digit added to the last field.
    csv = copy_run("checked");
    text = read_text(csv);
    write_text(csv, text.substr(0, text.size() - 1) + "7");
    expect_refused(csv, {csv + ": it does not end with a line break: cut short",
                         "column bound_share: '"});
}

// A results folder that is a dangling symlink is a usage error before anything is written.
TEST_F(Publish, ADanglingSymlinkForTheFolderIsRefused) {
    const std::string csv = copy_run("checked");
    fs::create_directories(dir_.path() / "results");
    fs::create_symlink(dir_.path() / "nowhere", dir_.path() / "results/tiny");
    const auto r = publish(csv);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("--to: " + (dir_ / "results/tiny") + " is a symlink to " +
                            (dir_ / "nowhere") + ", which does not exist"),
              std::string::npos)
        << r.output;
    EXPECT_FALSE(fs::exists(dir_.path() / "nowhere"));
}

TEST_F(Publish, AMissingColumnIsNamed) {
    const std::string csv = copy_run("checked");
    tamper(csv, [](auto& lines) {
        const auto at = std::find(lines[0].begin(), lines[0].end(), "noisy") - lines[0].begin();
        for (auto& l : lines) l.erase(l.begin() + at);
    });
    expect_refused(csv, {csv + ": line 1: column noisy is missing"});
}

TEST_F(Publish, AStatusOutsideTheSchemaIsRefused) {
    const std::string csv = copy_run("checked");
    tamper(csv, [](auto& lines) { set(lines, "status", "splendid"); });
    expect_refused(csv,
                   {"line 2 (backend reference-2threads), column status: 'splendid' is none of ok, "
                    "skipped, failed"});
}

TEST_F(Publish, AnotherSchemaVersionIsRefused) {
    const std::string csv = copy_run("checked");
    tamper(csv, [](auto& lines) { set(lines, "schema_version", "2"); });
    expect_refused(csv,
                   {"line 2 (backend reference-2threads), column schema_version: '2', not this "
                    "harness's schema version 1"});
}

TEST_F(Publish, EmptyProvenanceAndTextForANumberAreRefused) {
    const std::string csv = copy_run("checked");
    tamper(csv, [](auto& lines) {
        set(lines, "host", "");
        set(lines, "batch", "two");
    });
    expect_refused(csv, {"column host: empty, but a published row always has it",
                         "column batch: 'two' is not a whole number"});
}

TEST_F(Publish, AMissingSidecarIsRefused) {
    const std::string csv = copy_run("checked");
    fs::remove(dir_ / "in/tiny.json");
    expect_refused(csv, {"its JSON sidecar " + (dir_ / "in/tiny.json") + " is missing"});
}

TEST_F(Publish, AnUncheckedRowIsRefusedUnlessAllowedAndThenMarked) {
    const std::string csv = copy_run("unchecked");
    expect_refused(csv,
                   {"line 2 (backend reference-2threads), column check: empty (never checked): run "
                    "harness check on this build, or pass --allow-unchecked"});

    const std::string stale = copy_run("checked", "stale");
    tamper(stale, [](auto& lines) { set(lines, "check", "stale"); });
    expect_refused(stale, {"column check: 'stale': run harness check"});

    const auto r = publish(csv, "--allow-unchecked");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string index = read_text(dir_.path() / "results/README.md");
    EXPECT_NE(index.find("**unchecked**: `reference-2threads`"), std::string::npos) << index;
}

TEST_F(Publish, AnotherFileOfTheSameNameIsNotReplaced) {
    ASSERT_EQ(publish(copy_run("checked")).exit_code, 0);
    const std::string index = read_text(dir_.path() / "results/README.md");
    const auto r = publish(copy_run("unchecked"), "--allow-unchecked");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("tiny.csv exists and differs"), std::string::npos) << r.output;
    EXPECT_EQ(read_text(dir_.path() / "results/tiny/tiny.csv"),
              read_text(runs_dir() / "checked/tiny.csv"));
    EXPECT_EQ(read_text(dir_.path() / "results/README.md"), index);
}

TEST_F(Publish, AnIndexWithoutTheTableAndAHandWrittenSummaryAreLeftAlone) {
    const std::string csv = copy_run("checked");
    fs::create_directories(dir_.path() / "results/tiny");
    write_text(dir_.path() / "results/README.md", "# Not an index\n");
    auto r = publish(csv);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("has no table of published runs"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir_.path() / "results/tiny/tiny.csv"));

    fs::remove(dir_.path() / "results/README.md");
    write_text(dir_.path() / "results/tiny/summary.md", "# Written by hand\n");
    r = publish(csv);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("summary.md was not written by harness publish"), std::string::npos)
        << r.output;
    EXPECT_FALSE(fs::exists(dir_.path() / "results/tiny/tiny.csv"));
    EXPECT_FALSE(fs::exists(dir_.path() / "results/README.md"));
}

}  // namespace
