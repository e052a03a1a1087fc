// What every `harness run` checks across its backends: they start from the same weights and the
// same batch, so the loss of their first step must agree, to a tolerance known in advance (the
// loss tolerance of `harness check` for their math modes, check::tolerance_for). No recorded
// check is needed for that.
#pragma once

#include "output/record.hpp"

#include <vector>

namespace harness::check {

// The plugin whose run, when the invocation has one, is the yardstick of the others.
inline constexpr const char* kReferencePlugin = "reference";

// Sets loss_agreement and loss_agreement_detail of every run: "ok" or "disagrees" for each `ok`
// or `mismatch` run that took a step, "" for the others and for the run that is the yardstick.
//
// The yardstick: the first-step loss of the first run of the reference plugin, when the
// invocation has one that took a step with a finite loss; else the median of the first losses of
// the runs in the strictest math mode among them (a bfloat16 run does not move the float32 runs'
// yardstick; with one run in that mode, that run is the yardstick). The tolerance is relative, the
// larger of the loss tolerances of the run's math mode and the yardstick's. A non-finite first loss
// disagrees. Two runs in one mode that disagree are both flagged: either may be the wrong one.
void annotate_loss_agreement(std::vector<output::BackendRun>& runs);

}  // namespace harness::check
