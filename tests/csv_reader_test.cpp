#include "output/csv_reader.hpp"
#include "results_samples.hpp"

#include <gtest/gtest.h>

namespace {

using namespace harness::testing;

class CsvReader : public ResultsFiles {};

TEST_F(CsvReader, RejectsMalformedFilesAndReadsQuotedOnes) {
    const auto expect_throw = [&](const std::string& text) {
        std::ofstream(path("bad.csv"), std::ios::binary) << text;
        EXPECT_THROW(harness::output::read_csv(path("bad.csv")), std::runtime_error) << text;
    };
    expect_throw("");
    expect_throw("a,b\n1,2,3\n");
    expect_throw("a,b\n\"1,2\n");
    expect_throw("a,b\n\"1\"x,2\n");
    expect_throw("a,b\n1\"2,3\n");
    EXPECT_THROW(harness::output::read_csv(path("missing.csv")), std::runtime_error);

    std::ofstream(path("ok.csv"), std::ios::binary) << "a,b\r\n\"x\"\"y\",\r\n\"\",z";
    const auto rows = harness::output::read_csv(path("ok.csv"));
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].at("a"), "x\"y");
    EXPECT_EQ(rows[0].at("b"), "");
    EXPECT_EQ(rows[1].at("a"), "");
    EXPECT_EQ(rows[1].at("b"), "z");
}

}  // namespace
