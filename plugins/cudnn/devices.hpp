// What the CUDA runtime, the driver and cuDNN report on this machine, without failing when there
// is no GPU or no driver: such devices are listed as unavailable, with the runtime's reason.
#pragma once

#include "hb/plugin.hpp"

#include <string>
#include <utility>
#include <vector>

namespace hb_cudnn {

std::vector<std::pair<std::string, std::string>> library_versions();
std::vector<hb::DeviceInfo> cuda_devices();

// Empty when device `index` can be used, else why not.
std::string device_unavailable_reason(int index);

}  // namespace hb_cudnn
