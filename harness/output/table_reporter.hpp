// The console table of `harness run`: one line per backend (status, median ms, spread, images/s,
// GFLOP/s, first/last loss) over every round it ran, a noise warning where IQR/median > 10%, and
// the reason for every backend that did not run; with a baseline, each backend's rounds and its
// ratio to the baseline with the 95% interval over the rounds (docs/statistics.md); under it, a
// ***WARNING*** line for each state of the machine that spoils timings (docs/design.md §6).
#pragma once

#include "output/reporter.hpp"

#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace harness::output {

class TableReporter final : public Reporter {
public:
    // The baseline and the target, if any, are the provenance's round plan. The backends named in
    // `order` (the config's order) come first, in that order; the others as they first ran.
    explicit TableReporter(std::ostream& out, std::vector<std::string> order = {})
        : out_(out), order_(std::move(order)) {}
    void report_context(const Provenance& provenance) override { provenance_ = provenance; }
    // The columns are as wide as the widest run, so the table is written once, at the end.
    void finalize(const std::vector<BackendRun>& runs) override;

private:
    std::ostream& out_;
    std::vector<std::string> order_;
    Provenance provenance_;
};

}  // namespace harness::output
