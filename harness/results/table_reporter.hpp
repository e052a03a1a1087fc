// The console table of `harness run`: one line per backend (status, median ms, spread, images/s,
// GFLOP/s, first/last loss), a noise warning where IQR/median > 10%, and the reason for every
// backend that did not run.
#pragma once

#include "results/reporter.hpp"

#include <ostream>

namespace harness::results {

class TableReporter final : public Reporter {
public:
    explicit TableReporter(std::ostream& out) : out_(out) {}
    // The columns are as wide as the widest run, so the table is written once, at the end.
    void finalize(const std::vector<BackendRun>& runs) override;

private:
    std::ostream& out_;
};

}  // namespace harness::results
