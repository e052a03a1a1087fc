// The reporter interface: every reporter hears the same runs, and one that cannot write its file
// leaves no partial file behind.
#include "output/reporter.hpp"
#include "output/csv_reader.hpp"
#include "output/csv_reporter.hpp"
#include "output/json_reporter.hpp"
#include "output/json_sidecar_reporter.hpp"
#include "output/table_reporter.hpp"
#include "results_samples.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>
#include <sstream>
#include <stdexcept>

namespace {

using namespace harness::testing;

std::string backends_of(const std::vector<harness::output::BackendRun>& runs) {
    std::string s;
    for (const auto& r : runs) s += (s.empty() ? "" : ",") + r.backend;
    return s;
}

// Writes down every call it hears, with the name it was given.
class Recorder final : public harness::output::Reporter {
public:
    Recorder(std::vector<std::string>& log, std::string name) : log_(log), name_(std::move(name)) {}
    void report_context(const harness::output::Provenance& p) override {
        log_.push_back(name_ + " context " + p.host);
    }
    void report_runs(const std::vector<harness::output::BackendRun>& runs) override {
        log_.push_back(name_ + " runs " + backends_of(runs));
    }
    void finalize(const std::vector<harness::output::BackendRun>& runs) override {
        log_.push_back(name_ + " finalize " + backends_of(runs));
    }

private:
    std::vector<std::string>& log_;
    std::string name_;
};

class Unwritable final : public harness::output::Reporter {
public:
    void report_runs(const std::vector<harness::output::BackendRun>&) override {
        throw std::runtime_error("cannot write nowhere");
    }
};

TEST(Reporters, EveryReporterHearsTheSameCallsInOrder) {
    std::vector<std::string> log;
    harness::output::Reporters all;
    all.add(std::make_unique<Recorder>(log, "a"));
    all.add(std::make_unique<Recorder>(log, "b"));
    const harness::output::BackendRun one = full_run(), two = skipped_run();
    all.report_context(provenance());
    all.report_runs({one});
    all.report_runs({one, two});
    all.finalize({one, two});
    EXPECT_EQ(log, (std::vector<std::string>{
                       "a context box", "b context box", "a runs onednn", "b runs onednn",
                       "a runs onednn,libtorch-cuda", "b runs onednn,libtorch-cuda",
                       "a finalize onednn,libtorch-cuda", "b finalize onednn,libtorch-cuda"}));
}

TEST(Reporters, TheFirstThatThrowsStopsTheCall) {
    std::vector<std::string> log;
    harness::output::Reporters all;
    all.add(std::make_unique<Recorder>(log, "a"));
    all.add(std::make_unique<Unwritable>());
    all.add(std::make_unique<Recorder>(log, "c"));
    EXPECT_THROW(all.report_runs({full_run()}), std::runtime_error);
    EXPECT_EQ(log, std::vector<std::string>{"a runs onednn"});
}

TEST(ConsoleReporters, WriteOnlyWhenFinalized) {
    std::ostringstream table, json;
    harness::output::TableReporter t(table);
    harness::output::JsonReporter j(json);
    for (harness::output::Reporter* r : std::initializer_list<harness::output::Reporter*>{&t, &j}) {
        r->report_context(provenance());
        r->report_runs({full_run()});
    }
    EXPECT_EQ(table.str(), "");
    EXPECT_EQ(json.str(), "");
    t.finalize({full_run()});
    j.finalize({full_run()});
    EXPECT_NE(table.str().find("onednn"), std::string::npos) << table.str();
    EXPECT_EQ(nlohmann::json::parse(json.str()).at("runs").size(), 1u) << json.str();
}

class FileReporters : public ResultsFiles {};

TEST_F(FileReporters, EveryFormatShowsTheSameRuns) {
    std::ostringstream table, json;
    harness::output::Reporters all;
    all.add(std::make_unique<harness::output::CsvReporter>(path("r.csv")));
    all.add(std::make_unique<harness::output::JsonSidecarReporter>(path("r.json")));
    all.add(std::make_unique<harness::output::TableReporter>(table));
    all.add(std::make_unique<harness::output::JsonReporter>(json));
    report(all, provenance(), {full_run(), skipped_run()});

    const std::vector<std::string> expected{"onednn", "libtorch-cuda"};
    std::vector<std::string> csv, sidecar, stream, lines;
    for (const auto& row : harness::output::read_csv(path("r.csv")))
        csv.push_back(row.at("backend"));
    const auto doc = nlohmann::json::parse(slurp(path("r.json")));
    for (const auto& r : doc.at("runs")) sidecar.push_back(r.at("backend"));
    const auto streamed = nlohmann::json::parse(json.str());
    for (const auto& r : streamed.at("runs")) stream.push_back(r.at("backend"));
    std::istringstream in(table.str());
    std::string line;
    for (int i = 0; i < 4 && std::getline(in, line); ++i)
        if (i >= 2) lines.push_back(line.substr(0, line.find(' ')));
    EXPECT_EQ(csv, expected);
    EXPECT_EQ(sidecar, expected);
    EXPECT_EQ(stream, expected);
    EXPECT_EQ(lines, expected) << table.str();
    EXPECT_EQ(doc.at("provenance"), streamed.at("provenance"));
    // The environment's warnings: in every row, in both JSON documents and under the table.
    for (const auto& row : harness::output::read_csv(path("r.csv")))
        EXPECT_EQ(row.at("environment_warnings"),
                  harness::output::environment_warnings(provenance()));
    EXPECT_EQ(streamed.at("provenance").at("environment_warnings"),
              harness::output::environment_warnings(provenance()));
    EXPECT_NE(table.str().find(harness::output::environment_warning_lines(provenance())),
              std::string::npos)
        << table.str();
}

TEST_F(FileReporters, AFileIsRewrittenWholeAfterEveryRun) {
    harness::output::CsvReporter csv(path("r.csv"));
    csv.report_context(provenance());
    csv.report_runs({full_run()});
    EXPECT_EQ(harness::output::read_csv(path("r.csv")).size(),
              1u);  // what an interrupted run keeps
    csv.report_runs({full_run(), skipped_run()});
    EXPECT_EQ(harness::output::read_csv(path("r.csv")).size(), 2u);
    EXPECT_EQ(entries(), std::vector<std::string>{"r.csv"});
}

TEST_F(FileReporters, OneThatCannotWriteLeavesNoPartialFile) {
    std::filesystem::create_directories(path("occupied/inside"));
    harness::output::Reporters all;
    all.add(std::make_unique<harness::output::CsvReporter>(path("r.csv")));
    all.add(std::make_unique<harness::output::JsonSidecarReporter>(path("occupied")));
    all.report_context(provenance());
    try {
        all.report_runs({full_run()});
        FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(path("occupied")), std::string::npos) << e.what();
    }
    // The CSV written before the failure is whole, and nothing was left beside the two.
    EXPECT_EQ(harness::output::read_csv(path("r.csv")).size(), 1u);
    auto names = entries();
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"occupied", "r.csv"}));
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(path("occupied")),
                            std::filesystem::directory_iterator()),
              1);
}

}  // namespace
