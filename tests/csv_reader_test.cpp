#include "output/csv_reader.hpp"
#include "output/csv_line.hpp"
#include "output/csv_reporter.hpp"
#include "results_samples.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

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

// One rule recognises a run CSV (output::run_header_problem): the file test publish uses to pick
// a folder's runs is that rule on the file's header, as report applies it.
TEST_F(CsvReader, OneRuleRecognisesARunCsv) {
    const auto columns = harness::output::csv_columns();
    const auto header = [&](size_t count) {
        std::string text;
        harness::output::append_csv_line(
            text, std::vector<std::string>(columns.begin(),
                                           columns.begin() + static_cast<std::ptrdiff_t>(count)));
        return text;
    };
    const size_t old_layout =  // the first schema-1 layout ended with last_loss
        static_cast<size_t>(std::find(columns.begin(), columns.end(), "last_loss") -
                            columns.begin()) + 1;
    const std::vector<std::pair<std::string, bool>> files{
        {header(columns.size()), true},
        {header(old_layout), true},
        {header(old_layout - 1), false},
        {"config,configuration,timed_by,backend\n", false},  // harness layers'
        {"name,score,when\n", false},
    };
    for (size_t i = 0; i < files.size(); ++i) {
        const std::string file = path("f" + std::to_string(i) + ".csv");
        std::ofstream(file, std::ios::binary) << files[i].first;
        EXPECT_EQ(harness::output::is_run_csv(file), files[i].second) << files[i].first;
        EXPECT_EQ(harness::output::run_header_problem(harness::output::read_csv_table(file).header)
                      .empty(),
                  files[i].second)
            << files[i].first;
    }
    EXPECT_FALSE(harness::output::is_run_csv(path("missing.csv")));
}

}  // namespace
