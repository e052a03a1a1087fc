// `harness report`'s roofline (docs/roofline.md), per config and thread count: with --charts, each
// profiled backend's layer kinds as points, arithmetic intensity against the rate achieved, under
// the two ceilings the run measured, in the attribution chart's colours; with --by kind, each layer
// kind's profiled time against its bound.
#pragma once

#include "output/run_results.hpp"
#include "report/attribution_report.hpp"
#include "report/charts.hpp"

#include <vector>

namespace harness::report {

// A config's ceilings and step cost as the run's sidecars recorded them: on each thread count the
// best of the ceilings measured (a run's rounds in several files each measure their own).
struct RooflineMachine {
    std::string config;
    std::vector<output::Ceilings> ceilings;
    std::vector<output::KindCost> step_cost;
};

// The sidecars' machines, one per config that recorded a step cost.
std::vector<RooflineMachine> roofline_machines(const std::vector<output::SidecarRuns>& sidecars);

// A point per layer kind whose operations the profile timed (its FLOPs over its traced time) and
// one for the whole step (its FLOPs over its timed median), for each profiled run (rounds merged)
// whose config and thread count have ceilings.
std::vector<Chart> roofline_charts(const std::vector<ProfiledRun>& runs,
                                   const std::vector<RooflineMachine>& machines);

// Per config and thread count with ceilings and profiles: a Markdown table of each layer kind's
// bound and each backend's traced time per step with its excess over that bound, then the rest of
// the profiled step, the profiled step and the timed median, each against the step's bound.
std::string roofline_report(const std::vector<ProfiledRun>& runs,
                            const std::vector<RooflineMachine>& machines);

}  // namespace harness::report
