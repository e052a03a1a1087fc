// Data-parallel runs as a user starts them (docs/parallel.md): mpirun-launched ranks of the CPU
// backends on this machine, checked against their one-process step and timed.
#include "harness_process.hpp"
#include "output/csv_reader.hpp"
#include "plugin_host/child_process.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

using harness::testing::run_harness;
using harness::testing::shipped_config;
using harness::testing::TempDir;

namespace {

bool have(const std::string& file) {
    return std::filesystem::exists(file);
}

#define REQUIRE_MPI()                                                                           \
    if (!have(std::string(HB_BINARY_DIR) + "/communicators/libhb_comm_mpi.so"))                 \
        GTEST_SKIP() << "communicator mpi not built (no MPI at configure time)";                \
    if (std::system("command -v mpirun >/dev/null 2>&1") != 0)                                  \
        GTEST_SKIP() << "no mpirun on PATH (scripts/setup.sh installs Open MPI)"

}  // namespace

TEST(ParallelCheck, ReferenceAndOnednnAtOneAndTwoRanksEqualTheirOneProcessStep) {
    REQUIRE_MPI();
    if (!have(std::string(HB_PLUGIN_DIR) + "/hb_onednn.so")) GTEST_SKIP() << "onednn not built";
    auto r = run_harness("check " + shipped_config("check-parallel.yaml") + " --backends reference,onednn");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    for (const std::string backend : {"reference", "onednn"})
        for (const std::string ranks : {"1", "2"}) {
            const std::string line = backend + std::string(16 - backend.size(), ' ') + " " +
                                     std::string(5 - ranks.size(), ' ') + ranks + "  PASS";
            EXPECT_NE(r.output.find(line), std::string::npos) << line << "\n" << r.output;
        }
    EXPECT_NE(r.output.find("2 ranks equal to the one-process step's, bit for bit"),
              std::string::npos)
        << r.output;
}

// mpirun alone on PATH, without the rest of Open MPI's tools: no rank starts, and each row's message
// carries Open MPI's reason from the log, not only the worker's exit code.
TEST(ParallelRun, ARankThatCannotStartSaysWhyInItsRow) {
    REQUIRE_MPI();
    TempDir dir;
    std::filesystem::create_directories(dir / "bin");
    std::filesystem::create_symlink(
        std::filesystem::canonical(harness::plugin_host::find_executable("mpirun")),
        dir / "bin/mpirun");
    const std::string csv = dir / "p.csv";
    auto r = run_harness("run " + shipped_config("check-parallel.yaml") +
                             " --backends reference --warmup 0 --iterations 1 --output " + csv,
                         "PATH=" + (dir / "bin"));
    EXPECT_EQ(r.exit_code, 1) << r.output;
    const auto rows = harness::output::read_csv(csv);
    ASSERT_EQ(rows.size(), 2u) << r.output;
    for (const auto& row : rows) {
        EXPECT_EQ(row.at("status"), "failed") << row.at("message");
        const std::string message = row.at("message");
        const size_t reason = message.find(" without a result: ");
        ASSERT_NE(reason, std::string::npos) << message;
        EXPECT_GT(message.size(), reason + 30) << message;
    }
}

TEST(ParallelRun, RowsPerRankCountWithTheSlowestRankAndTheCommunicator) {
    REQUIRE_MPI();
    TempDir dir;
    const std::string csv = dir / "parallel.csv";
    auto r = run_harness("run " + shipped_config("check-parallel.yaml") +
                         " --backends reference --warmup 1 --iterations 3 --output " + csv);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto rows = harness::output::read_csv(csv);
    ASSERT_EQ(rows.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
        auto row = rows[i];
        EXPECT_EQ(row["status"], "ok") << row["message"];
        EXPECT_EQ(row["ranks"], i == 0 ? "1" : "2");
        EXPECT_EQ(row["batch"], i == 0 ? "2" : "4");  // the global batch
        EXPECT_EQ(row["communicator"], "mpi");
        EXPECT_NE(row["libraries"].find("mpi=Open MPI v"), std::string::npos) << row["libraries"];
        EXPECT_FALSE(row["communication_share"].empty());
        EXPECT_FALSE(row["allreduce_bytes"].empty());
    }
    auto two = rows[1];
    // Bandwidths only where something is exchanged; scaling only where no rank shares a core.
    EXPECT_TRUE(rows[0].at("allreduce_busbw_gbps").empty());
    EXPECT_FALSE(two["allreduce_busbw_gbps"].empty());
    EXPECT_EQ(two["scaling_efficiency"].empty(), two["oversubscribed"] == "true");

    // harness report keeps the rank counts apart and shows their own columns.
    auto report = run_harness("report " + csv);
    ASSERT_EQ(report.exit_code, 0) << report.output;
    EXPECT_NE(report.output.find("| reference (1 rank) |"), std::string::npos) << report.output;
    EXPECT_NE(report.output.find("| reference (2 ranks) | 2 | mpi |"), std::string::npos)
        << report.output;
}

TEST(ParallelRun, APluginWithoutSplitStepsIsSkippedWithTheReason) {
    REQUIRE_MPI();
    TempDir dir;
    const std::string yaml = dir / "fake.yaml";
    std::ifstream in(shipped_config("check-parallel.yaml"));
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    text = text.substr(0, text.find("backends:")) + "backends:\n  - plugin: fake_good\n";
    std::ofstream(yaml) << text;
    auto r = run_harness("run " + yaml + " --output " + (dir / "out.csv"),
                         harness::testing::fake_plugins_env());
    EXPECT_NE(r.output.find("has no data-parallel steps (no HB_CAP_DATA_PARALLEL"),
              std::string::npos)
        << r.output;
}
