// How `harness check` shows its outcome (docs/design.md §7): each format is a CheckReporter, and
// the command hands its outcome to one without knowing the format.
#pragma once

#include "check/check_runner.hpp"
#include "check/layer_check.hpp"

#include <string>

namespace harness::check {

class CheckReporter {
public:
    virtual ~CheckReporter() = default;
    virtual void report(const CheckRequest& request, const CheckOutcome& outcome) = 0;
    // `harness check --layers`: every configuration checked, then the worst by layer kind.
    virtual void report_layers(const CheckRequest& request, const LayerCheckOutcome& outcome) = 0;
};

// PASS, MISMATCH, SKIPPED or FAILED.
std::string verdict_of(const BackendCheck& check);
// PASS, MISMATCH, SKIPPED or FAILED, for a data-parallel step against the one-process step.
std::string rank_verdict_of(const RankCheck& check);
// True when the backend ran its steps (ok or mismatch), so that its comparison means something.
bool compared(const BackendCheck& check);

}  // namespace harness::check
