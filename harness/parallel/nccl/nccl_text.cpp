#include "parallel/nccl/nccl_text.hpp"

#include <cctype>
#include <stdexcept>

namespace harness::parallel {

int nccl_device_ordinal(const std::string& device) {
    const std::string prefix = "cuda:";
    const std::string digits =
        device.compare(0, prefix.size(), prefix) == 0 ? device.substr(prefix.size()) : "";
    bool valid = !digits.empty() && digits.size() <= 9;  // 9 digits fit in an int
    int ordinal = 0;
    for (size_t i = 0; valid && i < digits.size(); ++i) {
        valid = std::isdigit(static_cast<unsigned char>(digits[i])) != 0;
        ordinal = ordinal * 10 + (digits[i] - '0');
    }
    if (!valid)
        throw std::runtime_error(
            "communicator nccl needs a CUDA device \"cuda:N\"; the session's "
            "device is \"" +
            device + "\"");
    return ordinal;
}

std::string nccl_version_text(int code) {
    const int major = code >= 10000 ? code / 10000 : code / 1000;
    const int minor = code >= 10000 ? code % 10000 / 100 : code % 1000 / 100;
    const int patch = code % 100;
    return "NCCL " + std::to_string(major) + "." + std::to_string(minor) + "." +
           std::to_string(patch);
}

std::string nccl_algorithm_text(const char* nccl_algo) {
    const std::string algo = nccl_algo && *nccl_algo ? nccl_algo : "auto";
    return "ncclAllReduce (ncclAvg) per tensor, grouped per bucket, on a communication stream; "
           "algorithm NCCL's choice (NCCL_ALGO=" +
           algo + ")";
}

}  // namespace harness::parallel
