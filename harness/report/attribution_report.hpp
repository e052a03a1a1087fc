// `harness report --by kind|layer`: where each backend's step goes, side by side, from the
// profiles in the results' JSON sidecars (docs/design.md §6 "Profiles").
#pragma once

#include "output/profile.hpp"
#include "output/run_results.hpp"

#include <string>
#include <vector>

namespace harness::report {

// One backend's profile in a results sidecar.
struct ProfiledRun {
    std::string config, backend;
    double timed_median_ms = 0;  // of the timed steps, for comparison with the profiled ones
    output::Profile profile;     // its error says why it has none
    int threads = 0;             // the CPU threads it ran on; 0 when not known
};

// The profiled runs of a result CSV's sidecar (output/run_results.hpp).
std::vector<ProfiledRun> profiles(const output::SidecarRuns& sidecar);

// Several rounds of a config's backend become one: their means, weighted by profiled steps.
std::vector<ProfiledRun> merge_rounds(const std::vector<ProfiledRun>& runs);

enum class Attribution { kind, layer };

// Per config, milliseconds per step with one column per backend: by operation kind (the
// operations' sum, the unaccounted rest and the step below them), or for the ten layers whose
// times differ most between two backends. With two backends, their difference too.
std::string attribution_report(const std::vector<ProfiledRun>& runs, Attribution by);

}  // namespace harness::report
