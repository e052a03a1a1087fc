#include "output/profile.hpp"

namespace harness::output {

const std::vector<std::string> kOperationKinds = {
    "convolution forward",
    "convolution backward-data",
    "convolution backward-weights",
    "convolution backward (data and weights)",
    "batch norm",
    "ReLU",
    "pooling",
    "upsampling",
    "sums",
    "loss",
    "optimizer",
    "reorders and copies",
    "transfers",
    "other",
};

double Profile::operations_ms() const {
    double sum = 0;
    for (const auto& [kind, ms] : kinds_ms) sum += ms;
    return sum;
}

Profile summarize(const std::vector<ProfiledStep>& steps) {
    Profile p;
    p.steps = static_cast<int>(steps.size());
    if (steps.empty()) return p;
    const double share = 1.0 / static_cast<double>(steps.size());
    for (const ProfiledStep& step : steps) {
        p.step_ms += step.duration_ms * share;
        for (const Operation& op : step.operations) {
            const double ms = (op.end_ms - op.start_ms) * share;
            p.kinds_ms[op.kind] += ms;
            p.phase_operations[op.phase] += share;
            if (!op.layer.empty()) p.layers_ms[op.layer] += ms;
        }
    }
    return p;
}

}  // namespace harness::output
