#include "output/atomic_file.hpp"
#include "results_samples.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace {

using namespace harness::testing;

class AtomicFile : public ResultsFiles {};

TEST_F(AtomicFile, ReplacesAndLeavesNoTemporary) {
    harness::output::write_file_atomically(path("out.txt"), "first");
    harness::output::write_file_atomically(path("out.txt"), "second");
    EXPECT_EQ(slurp(path("out.txt")), "second");
    EXPECT_EQ(entries(), std::vector<std::string>{"out.txt"});
}

TEST_F(AtomicFile, UnwritablePathThrowsAndLeavesNothing) {
    std::ofstream(path("plain-file")) << "x";
    const std::string under_file = path("plain-file/r.csv");
    try {
        harness::output::write_file_atomically(under_file, "data");
        FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(under_file), std::string::npos) << e.what();
    }

    std::filesystem::create_directories(path("occupied/inside"));
    const std::string onto_dir = path("occupied");
    try {
        harness::output::write_file_atomically(onto_dir, "data");
        FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(onto_dir), std::string::npos) << e.what();
    }
    auto names = entries();
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"occupied", "plain-file"}));
    EXPECT_EQ(slurp(path("plain-file")), "x");
}

}  // namespace
