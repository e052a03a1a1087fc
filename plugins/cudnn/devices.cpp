#include "devices.hpp"

#include <cuda_runtime_api.h>
#include <cudnn.h>

namespace hb_cudnn {
namespace {

std::string cuda_version(int v) {
    return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

// The device count, or the runtime's reason when there is none.
int device_count(std::string& reason) {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        int driver = 0;
        // Without libcuda the runtime reports an "insufficient" driver; say what is really missing.
        if (cudaDriverGetVersion(&driver) == cudaSuccess && driver == 0)
            reason = "no NVIDIA driver installed";
        else
            reason = cudaGetErrorString(e);
        cudaGetLastError();
        return 0;
    }
    if (count == 0) reason = "no CUDA-capable device is detected";
    return count;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> library_versions() {
    std::vector<std::pair<std::string, std::string>> out;
    int runtime = 0, driver = 0;
    if (cudaRuntimeGetVersion(&runtime) == cudaSuccess)
        out.emplace_back("CUDA runtime", cuda_version(runtime));
    if (cudaDriverGetVersion(&driver) == cudaSuccess)
        out.emplace_back("CUDA driver", driver ? cuda_version(driver) : "none");
    const size_t v = cudnnGetVersion();
    out.emplace_back("cuDNN", std::to_string(v / 10000) + "." + std::to_string(v % 10000 / 100) +
                                  "." + std::to_string(v % 100));
    return out;
}

std::vector<hb::DeviceInfo> cuda_devices() {
    std::string reason;
    const int count = device_count(reason);
    std::vector<hb::DeviceInfo> out;
    if (count == 0) {
        out.push_back({"cuda:0", "CUDA device 0", false, reason});
        return out;
    }
    for (int i = 0; i < count; ++i) {
        hb::DeviceInfo d;
        d.name = "cuda:" + std::to_string(i);
        cudaDeviceProp p{};
        const cudaError_t e = cudaGetDeviceProperties(&p, i);
        if (e != cudaSuccess) {
            d.description = "CUDA device " + std::to_string(i);
            d.available = false;
            d.unavailable_reason = cudaGetErrorString(e);
            cudaGetLastError();
        } else {
            d.description = std::string(p.name) + ", " + std::to_string(p.totalGlobalMem >> 20) +
                            " MiB, compute capability " + std::to_string(p.major) + "." +
                            std::to_string(p.minor);
        }
        out.push_back(d);
    }
    return out;
}

std::string device_unavailable_reason(int index) {
    std::string reason;
    const int count = device_count(reason);
    if (count == 0) return reason;
    if (index >= count)
        return "device cuda:" + std::to_string(index) + " does not exist (" +
               std::to_string(count) + " CUDA device" + (count == 1 ? "" : "s") + " here)";
    return "";
}

}  // namespace hb_cudnn
