#include "plugin_host/library_output.hpp"
#include "harness_process.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

using harness::plugin_host::LibraryOutput;
using harness::testing::TempDir;

namespace {

std::string file_text(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

TEST(LibraryOutput, SendsFileDescriptorTwoToTheLogAndKeepsTheConsole) {
    TempDir dir;
    const std::string log = dir / "worker.log";
    EXPECT_EQ(harness::plugin_host::console(), stderr);
    {
        const LibraryOutput output(log);
        EXPECT_NE(harness::plugin_host::console(), stderr);
        const char line[] = "written by a library\n";
        ASSERT_EQ(::write(STDERR_FILENO, line, sizeof line - 1),
                  static_cast<ssize_t>(sizeof line - 1));
        std::fputs("through stdio\n", stderr);
    }
    EXPECT_EQ(harness::plugin_host::console(), stderr);
    EXPECT_EQ(file_text(log), "written by a library\nthrough stdio\n");
}

TEST(LibraryOutput, AnUnwritableLogIsAnErrorNamingIt) {
    try {
        const LibraryOutput output("/nonexistent-folder/worker.log");
        FAIL() << "no error";
    } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent-folder/worker.log"), std::string::npos)
            << e.what();
    }
}

TEST(LibraryOutput, ALongLogKeepsItsTailFromALineStart) {
    TempDir dir;
    const std::string log = dir / "worker.log";
    {
        std::ofstream out(log);
        for (int i = 0; i < 100; ++i) out << "line " << i << "\n";
    }
    const std::string kept = harness::plugin_host::read_log(log, 40);
    EXPECT_EQ(kept.rfind("[the log's first ", 0), 0u) << kept;
    EXPECT_NE(kept.find("line 99\n"), std::string::npos) << kept;
    EXPECT_EQ(kept.find("line 9\n"), std::string::npos) << kept;
    EXPECT_EQ(kept.substr(kept.find('\n') + 1, 5), "line ") << kept;
    EXPECT_EQ(harness::plugin_host::read_log(dir / "absent.log"), "");
    EXPECT_EQ(harness::plugin_host::read_log(log), file_text(log));
}

TEST(LibraryOutput, TheConsoleGetsACountOrTheLastLines) {
    EXPECT_EQ(harness::plugin_host::log_tail_for_console("", 10, "  "), "");
    EXPECT_EQ(harness::plugin_host::log_tail_for_console("a\nb\n", 0, "  "),
              "  the libraries wrote 2 lines to stderr, kept in the JSON row's \"log\"\n");
    EXPECT_EQ(harness::plugin_host::log_tail_for_console("a\nb\nc", 2, ""),
              "the libraries wrote 3 lines to stderr (kept in the JSON row's \"log\"); the last "
              "2:\n  b\n  c\n");
    EXPECT_EQ(harness::plugin_host::log_tail_for_console("only\n", 5, ""),
              "the libraries wrote 1 line to stderr (kept in the JSON row's \"log\"):\n  only\n");
}

// A worker that ended without a result: its row's message carries the first thing its log says,
// past Open MPI's rules and TensorFlow's informational lines.
TEST(LibraryOutput, TheReasonInALogIsItsFirstParagraphOfText) {
    using harness::plugin_host::reason_in_log;
    EXPECT_EQ(reason_in_log(
                  "-----------------------------------------------------------------------\n"
                  "The value of the MCA parameter \"plm_rsh_agent\" was set to a path\n"
                  "that could not be found:\n\n  plm_rsh_agent: ssh : rsh\n"
                  "-----------------------------------------------------------------------\n"),
              "The value of the MCA parameter \"plm_rsh_agent\" was set to a path that could not "
              "be found:");
    EXPECT_EQ(reason_in_log("2026-12-06 20:13:00.123456: I tensorflow/core/util/port.cc:153] "
                            "oneDNN custom operations are on.\n"
                            "W1206 20:13:00.123 12 cpu_feature_guard.cc] AVX512F\n"
                            "terminate called after throwing an instance of 'std::bad_alloc'\n"
                            "  what():  std::bad_alloc\n"),
              "terminate called after throwing an instance of 'std::bad_alloc' what():  "
              "std::bad_alloc");
    EXPECT_EQ(reason_in_log(""), "");
    EXPECT_EQ(reason_in_log("-----\n\n"), "");
    EXPECT_EQ(reason_in_log(std::string(1000, 'x')).size(), 300u);
}
