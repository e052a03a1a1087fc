// `harness run --json`: the provenance and every run as one JSON document on a stream, in the
// JSON form of run_json.hpp.
#pragma once

#include "output/reporter.hpp"

#include <ostream>

namespace harness::output {

class JsonReporter final : public Reporter {
public:
    explicit JsonReporter(std::ostream& out) : out_(out) {}
    void report_context(const Provenance& provenance) override { provenance_ = provenance; }
    void finalize(const std::vector<BackendRun>& runs) override;

private:
    std::ostream& out_;
    Provenance provenance_;
};

}  // namespace harness::output
