// A small captured step, a conv layer and a batch norm's statistic, for the comparison's tests.
#pragma once

#include "check/comparison.hpp"

namespace harness::testing {

inline check::StepCapture sample_capture() {
    check::StepCapture c;
    c.losses = {1.25, 1.125};
    c.gradients["conv.weight"] = {0.5f, -0.25f, 0.125f, 1.0f};
    c.gradients["conv.bias"] = {1e-9f, -2e-9f};  // zero in exact arithmetic: only noise
    c.state["conv.weight"] = {0.1f, 0.2f, -0.3f, 0.4f};
    c.state["conv.bias"] = {0.01f, -0.02f};
    c.state["bn.running_var"] = {1.0f, 0.9f};
    return c;
}

}  // namespace harness::testing
