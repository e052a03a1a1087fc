// The console table of `harness run`: one line per backend (status, median ms, spread, images/s,
// GFLOP/s, first/last loss) over every round it ran, a noise warning where IQR/median > 10%, and
// the reason for every backend that did not run; with a baseline, each backend's rounds and its
// ratio to the baseline with the 95% interval over the rounds (docs/statistics.md); under it, a
// ***WARNING*** line for each state of the machine that spoils timings (docs/design.md §6).
#pragma once

#include "output/reporter.hpp"

#include <ostream>

namespace harness::output {

class TableReporter final : public Reporter {
public:
    // The baseline and the target, if any, are the provenance's round plan.
    explicit TableReporter(std::ostream& out) : out_(out) {}
    void report_context(const Provenance& provenance) override { provenance_ = provenance; }
    // The columns are as wide as the widest run, so the table is written once, at the end.
    void finalize(const std::vector<BackendRun>& runs) override;

private:
    std::ostream& out_;
    Provenance provenance_;
};

}  // namespace harness::output
