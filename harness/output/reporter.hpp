// How results leave `harness run` (docs/design.md §8): each output format is a Reporter, and the
// runner hands every reporter the same provenance and runs without knowing any format.
#pragma once

#include "output/record.hpp"

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace harness::output {

// A result that could not be written where it was asked to go.
class OutputError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class Reporter {
public:
    virtual ~Reporter() = default;
    // Once, before the first run: what every run of this invocation shares.
    virtual void report_context(const Provenance& /*provenance*/) {}
    // After each finished run, with every run so far in run order. Throws OutputError naming
    // the output when it cannot be written.
    virtual void report_runs(const std::vector<BackendRun>& /*runs*/) {}
    // Once, after the last run or an interruption, with every run.
    virtual void finalize(const std::vector<BackendRun>& /*runs*/) {}
};

// Several reporters as one, each called in the order it was added; the first that throws stops
// the call there.
class Reporters final : public Reporter {
public:
    void add(std::unique_ptr<Reporter> reporter);
    void report_context(const Provenance& provenance) override;
    void report_runs(const std::vector<BackendRun>& runs) override;
    void finalize(const std::vector<BackendRun>& runs) override;

private:
    std::vector<std::unique_ptr<Reporter>> reporters_;
};

// A reporter that keeps its output in a file, rewritten whole after every run through
// write_file_atomically: an interrupted invocation keeps what it measured, and no reader ever sees
// a partial or invalid file.
class FileReporter : public Reporter {
public:
    explicit FileReporter(std::string path) : path_(std::move(path)) {}
    void report_context(const Provenance& provenance) final { provenance_ = provenance; }
    void report_runs(const std::vector<BackendRun>& runs) final;

protected:
    // The whole file for these runs.
    virtual std::string contents(const Provenance& provenance,
                                 const std::vector<BackendRun>& runs) const = 0;

private:
    std::string path_;
    Provenance provenance_;
};

}  // namespace harness::output
