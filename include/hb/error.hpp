// The exception every plugin throws: its status crosses the C ABI, its message is kept by the
// failing object (docs/design.md §3). Header-only, standard library only.
#pragma once

#include "hb/plugin.h"

#include <stdexcept>
#include <string>

namespace hb {

// Throw this (or anything derived from std::exception) from plugin code; the status reaches the
// harness, and the message is kept by the failing object.
class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message, hb_status status = HB_ERROR)
        : std::runtime_error(message), status_(status) {}
    hb_status status() const { return status_; }

private:
    hb_status status_;
};

// The refusal of a split step's call (gradient_buffers, forward_backward, apply_update) by a
// session whose option `cuda_graphs` captures the whole step as one CUDA graph.
inline Error captured_step_refusal(const std::string& call) {
    return Error(call +
                     ": option 'cuda_graphs' captures forward, backward and update as one CUDA "
                     "graph, which cannot stop between them; set it to false for data-parallel "
                     "steps",
                 HB_UNSUPPORTED);
}

}  // namespace hb
