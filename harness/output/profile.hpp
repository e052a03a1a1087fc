// Where a backend's step goes: the operations of its profiled steps (ABI 2.1's events, named by
// the harness) and their sums per operation kind and per layer (docs/design.md §6 "Profiles").
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace harness::output {

// One operation of a profiled step.
struct Operation {
    std::string name;   // the plugin's: "convolution", "aten::add_", ...
    std::string layer;  // the IR layer's hierarchical name; "" when it belongs to none
    std::string kind;   // one of kOperationKinds
    std::string phase;  // hb::to_string(hb_phase)
    std::string track;  // the thread or stream
    double start_ms = 0, end_ms = 0;  // from the step's start
};

struct ProfiledStep {
    double start_ms = 0;     // from the first profiled step's start, on the host's clock
    double duration_ms = 0;  // the step's wall time, as the harness timed it
    std::vector<Operation> operations;
};

// The kinds an operation is counted under, in the order reports list them.
extern const std::vector<std::string> kOperationKinds;

// Means per profiled step.
struct Profile {
    int steps = 0;
    double step_ms = 0;                       // the wall time of a profiled step
    std::map<std::string, double> kinds_ms;   // operation kind -> ms
    std::map<std::string, double> layers_ms;  // layer name -> ms, every phase
    // Phase (hb::to_string(hb_phase)) -> operations run per step: how fine-grained the step is.
    std::map<std::string, double> phase_operations;
    std::string error;  // why there is no profile (the plugin cannot profile, ...); "" otherwise

    double operations_ms() const;  // the sum over kinds
    // The step's time outside every operation: the framework's own work between them.
    double unaccounted_ms() const { return step_ms - operations_ms(); }
};

Profile summarize(const std::vector<ProfiledStep>& steps);

}  // namespace harness::output
