// What the communicator `nccl` says and reads in words, without CUDA or NCCL: its device's
// ordinal, its library's version and its all-reduce.
#pragma once

#include <string>

namespace harness::parallel {

// N of the session's device "cuda:N". Throws std::runtime_error for any other name.
int nccl_device_ordinal(const std::string& device);

// "NCCL 2.28.9" from ncclGetVersion's code: major*10000 + minor*100 + patch since NCCL 2.9,
// major*1000 + minor*100 + patch before.
std::string nccl_version_text(int code);

// The module's algorithm(), given NCCL_ALGO's value (nullptr when unset).
std::string nccl_algorithm_text(const char* nccl_algo);

}  // namespace harness::parallel
