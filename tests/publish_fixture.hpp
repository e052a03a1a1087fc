// The publish tests' fixture: runs of configs/tiny.yaml made once (PublishRuns, in
// publish_test.cpp), copied into each test's folder, tampered with, and published there.
#pragma once

#include "harness_process.hpp"
#include "output/csv_line.hpp"
#include "output/csv_reader.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

namespace harness::testing {

namespace fs = std::filesystem;

inline std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_text(const fs::path& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

inline size_t count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

// Where PublishRuns leaves one checked run and one unchecked run of tiny.yaml for every test.
inline fs::path runs_dir() {
    return fs::path(HB_BINARY_DIR) / "tests/publish-runs";
}

class Publish : public ::testing::Test {
protected:
    // A copy of a run (`checked` or `unchecked`) in this test's folder as NAME.csv and NAME.json.
    std::string copy_run(const std::string& which, const std::string& name = "tiny") {
        fs::create_directories(dir_.path() / "in");
        const std::string csv = dir_ / ("in/" + name + ".csv");
        fs::copy_file(runs_dir() / which / "tiny.csv", csv, fs::copy_options::overwrite_existing);
        fs::copy_file(runs_dir() / which / "tiny.json", dir_ / ("in/" + name + ".json"),
                      fs::copy_options::overwrite_existing);
        return csv;
    }

    // The CSV rewritten with `change` applied to its header and rows (as field lists).
    static void tamper(const std::string& csv,
                       const std::function<void(std::vector<std::vector<std::string>>&)>& change) {
        const auto table = harness::output::read_csv_table(csv);
        std::vector<std::vector<std::string>> lines{table.header};
        for (const auto& row : table.rows) {
            std::vector<std::string>& fields = lines.emplace_back();
            for (const auto& column : table.header) fields.push_back(row.at(column));
        }
        change(lines);
        std::string text;
        for (const auto& l : lines) harness::output::append_csv_line(text, l);
        write_text(csv, text);
    }
    static void set(std::vector<std::vector<std::string>>& lines, const std::string& column,
                    const std::string& value) {
        const auto at = std::find(lines[0].begin(), lines[0].end(), column) - lines[0].begin();
        ASSERT_LT(static_cast<size_t>(at), lines[0].size()) << column;
        lines[1][static_cast<size_t>(at)] = value;
    }

    harness::testing::CommandResult publish(const std::string& csv,
                                            const std::string& options = "") {
        return run_harness("publish " + csv + " --to " + (dir_ / "results/tiny") + " " + options);
    }

    // A refusal: exit 2, every message given, and no results folder.
    void expect_refused(const std::string& csv, const std::vector<std::string>& messages,
                        const std::string& options = "") {
        const auto r = publish(csv, options);
        EXPECT_EQ(r.exit_code, 2) << r.output;
        for (const auto& m : messages) EXPECT_NE(r.output.find(m), std::string::npos) << r.output;
        EXPECT_NE(r.output.find("nothing was written"), std::string::npos) << r.output;
        EXPECT_FALSE(fs::exists(dir_.path() / "results")) << r.output;
    }

    TempDir dir_;
};

}  // namespace harness::testing
