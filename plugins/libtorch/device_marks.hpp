// The clock of a profiled step's operations on a CUDA device: events recorded on the current
// stream at each operation's start and end, and one at the step's start, read once the step has
// completed. The events come from a pool that lasts as long as the session (profile::MarkPool),
// so a profiled step after the first creates none. Needs a LibTorch built with CUDA.
#pragma once

#include "op_events.hpp"

#include <c10/core/Device.h>

#include <cstdint>
#include <memory>

namespace hb_libtorch {

class DeviceMarks {
public:
    // Throws hb::Error(HB_UNSUPPORTED) in a build without CUDA.
    explicit DeviceMarks(const c10::Device& device);
    ~DeviceMarks();
    DeviceMarks(const DeviceMarks&) = delete;
    DeviceMarks& operator=(const DeviceMarks&) = delete;

    // Forgets the previous step's marks and records the step's start on the current stream.
    void begin_step();
    // Records a mark on the calling thread's current stream of the device; returns its index and
    // the stream's id in `stream`. Safe from any thread (the autograd engine's device thread).
    uint32_t record(int64_t& stream);
    // Milliseconds from the step's start to `mark`; call once the step has completed.
    double elapsed_ms(uint32_t mark) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace hb_libtorch
