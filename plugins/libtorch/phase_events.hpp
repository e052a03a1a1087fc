// Phase times of a step on a CUDA device: events recorded on the current stream between the
// phases and read once the step has completed. Recorded while a CUDA graph is captured, they
// become nodes of the graph, so each replay records them again. Needs a LibTorch built with CUDA.
#pragma once

#include "hb/plugin.hpp"

#include <c10/core/Device.h>

#include <memory>

namespace hb_libtorch {

class PhaseEvents {
public:
    enum Mark { start, forward_end, backward_end, update_start, end, marks };

    // Throws hb::Error(HB_UNSUPPORTED) in a build without CUDA.
    explicit PhaseEvents(const c10::Device& device);
    ~PhaseEvents();
    PhaseEvents(const PhaseEvents&) = delete;
    PhaseEvents& operator=(const PhaseEvents&) = delete;

    void record(Mark mark);  // on the device's current stream
    // The phases between the marks of the latest step, once its marks were reached: forward and
    // backward, and the update.
    void read_passes(hb::StepResult& result) const;
    void read_update(hb::StepResult& result) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace hb_libtorch
