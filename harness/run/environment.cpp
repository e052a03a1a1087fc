#include "run/environment.hpp"

#include "run/provenance.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <boost/dll/shared_library.hpp>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <set>
#include <sstream>
#include <utility>

namespace harness::run {

namespace fs = std::filesystem;

namespace {

// "cpu12" -> 12; nullopt for "cpufreq", "cpuidle", ...
std::optional<int> cpu_number(const std::string& name) {
    if (name.size() <= 3 || name.rfind("cpu", 0) != 0) return std::nullopt;
    if (name.find_first_not_of("0123456789", 3) != std::string::npos) return std::nullopt;
    return std::atoi(name.c_str() + 3);
}

std::string join(const std::vector<std::string>& parts, const char* separator) {
    std::string out;
    for (const std::string& p : parts) out += (out.empty() ? "" : separator) + p;
    return out;
}

}  // namespace

std::vector<std::string> read_governors(const fs::path& root) {
    std::vector<std::pair<int, std::string>> found;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(root / "sys/devices/system/cpu", ec)) {
        const auto n = cpu_number(entry.path().filename().string());
        if (!n) continue;
        std::string governor = first_line((entry.path() / "cpufreq/scaling_governor").string());
        if (!governor.empty()) found.emplace_back(*n, std::move(governor));
    }
    std::sort(found.begin(), found.end());
    std::vector<std::string> governors;
    for (auto& [n, g] : found) governors.push_back(std::move(g));
    return governors;
}

EnvironmentFinding check_cpu_scaling(const std::vector<std::string>& governors) {
    EnvironmentFinding f{"cpu_scaling", "unknown", "", false};
    if (governors.empty()) {
        f.message = "CPU frequency scaling unknown: no cpufreq governor in /sys";
        return f;
    }
    std::set<std::string> others;
    size_t scaled = 0;
    for (const std::string& g : governors) {
        if (g == "performance") continue;
        others.insert(g);
        ++scaled;
    }
    if (others.empty()) {
        f.state = "performance";
        f.message =
            fmt::format("CPU frequency governor performance on all {} CPUs", governors.size());
        return f;
    }
    f.state = join({others.begin(), others.end()}, "/");
    f.warning = true;
    f.message = fmt::format(
        "CPU frequency scaling is enabled (governor {} on {} of {} CPUs): the timings may be noisy "
        "and slower; `cpupower frequency-set -g performance` turns it off",
        join({others.begin(), others.end()}, ", "), scaled, governors.size());
    return f;
}

double idle_load_limit(int cpus) {
    return std::max(kIdleLoadFloor, kIdleLoadPerCpu * std::max(cpus, 1));
}

EnvironmentFinding check_load(const std::string& loadavg, int cpus) {
    EnvironmentFinding f{"load_average", "unknown", "load average unknown", false};
    std::istringstream in(loadavg);
    double load = 0;
    if (!(in >> load) || load < 0) return f;
    const double limit = idle_load_limit(cpus);
    f.state = fmt::format("{:.2f}", load);
    if (load <= limit) {
        f.message = fmt::format("load average {:.2f} on {} CPUs", load, cpus);
        return f;
    }
    f.warning = true;
    f.message = fmt::format(
        "load average {:.2f} on {} CPUs, above an idle machine's {:.2f}: other work competes "
        "with the backends for the CPUs",
        load, cpus, limit);
    return f;
}

std::string slowdown_reasons(uint64_t reasons) {
    // nvml.h's nvmlClocksEventReason* (formerly nvmlClocksThrottleReason*) values.
    static constexpr std::array<std::pair<uint64_t, const char*>, 5> kSlowdowns{{
        {0x4, "sw_power_cap"},
        {0x8, "hw_slowdown"},
        {0x20, "sw_thermal_slowdown"},
        {0x40, "hw_thermal_slowdown"},
        {0x80, "hw_power_brake_slowdown"},
    }};
    std::vector<std::string> names;
    for (const auto& [bit, name] : kSlowdowns)
        if ((reasons & bit) != 0) names.emplace_back(name);
    return join(names, "+");
}

namespace {

std::string gpu_label(const GpuState& gpu) {
    return gpu.name.empty() ? fmt::format("GPU {}", gpu.index)
                            : fmt::format("GPU {} ({})", gpu.index, gpu.name);
}

}  // namespace

EnvironmentFinding check_gpu_processes(const GpuProbe& probe) {
    EnvironmentFinding f{"gpu_processes", "unknown", "", false};
    if (!probe.unavailable.empty()) {
        f.message = "GPU processes not checked: " + probe.unavailable;
        return f;
    }
    size_t others = 0;
    std::vector<std::string> where;
    for (const GpuState& gpu : probe.gpus) {
        if (gpu.other_pids.empty()) continue;
        others += gpu.other_pids.size();
        std::vector<std::string> pids;
        for (unsigned pid : gpu.other_pids) pids.push_back(std::to_string(pid));
        where.push_back(fmt::format("{}: pid {}", gpu_label(gpu), join(pids, ", ")));
    }
    f.state = std::to_string(others);
    if (others == 0) {
        f.message = fmt::format("no other process on the {} GPU(s)", probe.gpus.size());
        return f;
    }
    f.warning = true;
    f.message = fmt::format("{} other process{} on the GPU ({}): {} for the device and its memory",
                            others, others == 1 ? "" : "es", join(where, "; "),
                            others == 1 ? "it competes" : "they compete");
    return f;
}

EnvironmentFinding check_gpu_clocks(const GpuProbe& probe) {
    EnvironmentFinding f{"gpu_clocks", "unknown", "", false};
    if (!probe.unavailable.empty()) {
        f.message = "GPU clocks not checked: " + probe.unavailable;
        return f;
    }
    std::set<std::string> reasons;
    std::vector<std::string> where;
    size_t read = 0;
    for (const GpuState& gpu : probe.gpus) {
        if (!gpu.clock_event_reasons) continue;
        ++read;
        const std::string slow = slowdown_reasons(*gpu.clock_event_reasons);
        if (slow.empty()) continue;
        reasons.insert(slow);
        where.push_back(fmt::format("{}: {}", gpu_label(gpu), slow));
    }
    if (read == 0) {
        f.message = "GPU clocks unknown: NVML did not report their state";
        return f;
    }
    if (where.empty()) {
        f.state = "full";
        f.message = fmt::format("GPU clocks not slowed down on {} GPU(s)", read);
        return f;
    }
    f.state = join({reasons.begin(), reasons.end()}, "+");
    f.warning = true;
    f.message = fmt::format(
        "GPU clocks are slowed down ({}): the timings are slower than the GPU can run; "
        "`nvidia-smi -q -d PERFORMANCE` says why",
        join(where, "; "));
    return f;
}

namespace {

// The parts of nvml.h used here, declared by hand: the harness needs no CUDA to build.
using NvmlReturn = int;  // nvmlReturn_t
using NvmlDevice = void*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr NvmlReturn kNvmlInsufficientSize = 7;
struct NvmlProcessInfo {  // nvmlProcessInfo_t of the _v2 and _v3 process queries
    unsigned pid;
    unsigned long long used_gpu_memory;
    unsigned gpu_instance_id;
    unsigned compute_instance_id;
};
static_assert(sizeof(NvmlProcessInfo) == 24, "nvmlProcessInfo_t is 24 bytes");
using NvmlVoid = NvmlReturn();
using NvmlErrorString = const char*(NvmlReturn);
using NvmlCount = NvmlReturn(unsigned*);
using NvmlHandle = NvmlReturn(unsigned, NvmlDevice*);
using NvmlName = NvmlReturn(NvmlDevice, char*, unsigned);
using NvmlProcesses = NvmlReturn(NvmlDevice, unsigned*, NvmlProcessInfo*);
using NvmlReasons = NvmlReturn(NvmlDevice, unsigned long long*);

// The library while it is open, and NVML initialised while this lives: both undone by the
// destructors, in that order.
class Nvml {
public:
    explicit Nvml(boost::dll::shared_library library) : library_(std::move(library)) {}
    Nvml(const Nvml&) = delete;
    Nvml& operator=(const Nvml&) = delete;
    ~Nvml() {
        if (initialised_) library_.get<NvmlVoid>("nvmlShutdown")();
    }

    // "" when NVML is ready, else why not.
    std::string init() {
        for (const char* f : {"nvmlInit_v2", "nvmlShutdown", "nvmlDeviceGetCount_v2",
                              "nvmlDeviceGetHandleByIndex_v2"})
            if (!library_.has(f)) return std::string("the NVML library has no ") + f;
        const NvmlReturn rc = library_.get<NvmlVoid>("nvmlInit_v2")();
        if (rc != kNvmlSuccess) return "nvmlInit failed: " + error(rc);
        initialised_ = true;
        return "";
    }

    std::string error(NvmlReturn rc) const {
        if (library_.has("nvmlErrorString"))
            return library_.get<NvmlErrorString>("nvmlErrorString")(rc);
        return fmt::format("NVML error {}", rc);
    }

    template <typename F>
    F* function(const char* name) const {
        return library_.has(name) ? &library_.get<F>(name) : nullptr;
    }

private:
    boost::dll::shared_library library_;
    bool initialised_ = false;
};

std::vector<unsigned> other_processes(const Nvml& nvml, NvmlDevice device) {
    auto* query = nvml.function<NvmlProcesses>("nvmlDeviceGetComputeRunningProcesses_v3");
    if (!query) query = nvml.function<NvmlProcesses>("nvmlDeviceGetComputeRunningProcesses_v2");
    if (!query) return {};
    std::vector<NvmlProcessInfo> infos(16);
    auto count = static_cast<unsigned>(infos.size());
    NvmlReturn rc = query(device, &count, infos.data());
    if (rc == kNvmlInsufficientSize) {
        infos.resize(count + 8);
        count = static_cast<unsigned>(infos.size());
        rc = query(device, &count, infos.data());
    }
    std::vector<unsigned> pids;
    if (rc != kNvmlSuccess) return pids;
    const auto self = static_cast<unsigned>(getpid());
    for (unsigned i = 0; i < count && i < infos.size(); ++i)
        if (infos[i].pid != self) pids.push_back(infos[i].pid);
    return pids;
}

std::optional<uint64_t> clock_event_reasons(const Nvml& nvml, NvmlDevice device) {
    auto* query = nvml.function<NvmlReasons>("nvmlDeviceGetCurrentClocksEventReasons");
    if (!query) query = nvml.function<NvmlReasons>("nvmlDeviceGetCurrentClocksThrottleReasons");
    unsigned long long reasons = 0;
    if (!query || query(device, &reasons) != kNvmlSuccess) return std::nullopt;
    return static_cast<uint64_t>(reasons);
}

}  // namespace

GpuProbe probe_gpus(const std::string& library) {
    GpuProbe probe;
    boost::dll::fs::error_code ec;
    boost::dll::shared_library lib(library,
                                   boost::dll::load_mode::search_system_folders |
                                       boost::dll::load_mode::rtld_now |
                                       boost::dll::load_mode::rtld_local,
                                   ec);
    if (ec || !lib.is_loaded()) {
        probe.unavailable = "no NVIDIA driver (" + library + " not found)";
        return probe;
    }
    Nvml nvml(std::move(lib));
    probe.unavailable = nvml.init();
    if (!probe.unavailable.empty()) return probe;

    unsigned count = 0;
    const NvmlReturn rc = nvml.function<NvmlCount>("nvmlDeviceGetCount_v2")(&count);
    if (rc != kNvmlSuccess) {
        probe.unavailable = "nvmlDeviceGetCount failed: " + nvml.error(rc);
        return probe;
    }
    if (count == 0) {
        probe.unavailable = "NVML sees no GPU";
        return probe;
    }
    auto* handle = nvml.function<NvmlHandle>("nvmlDeviceGetHandleByIndex_v2");
    auto* name = nvml.function<NvmlName>("nvmlDeviceGetName");
    for (unsigned i = 0; i < count; ++i) {
        NvmlDevice device = nullptr;
        if (handle(i, &device) != kNvmlSuccess) continue;  // a GPU this process may not use
        GpuState gpu;
        gpu.index = i;
        std::array<char, 96> text{};  // NVML_DEVICE_NAME_V2_BUFFER_SIZE
        if (name && name(device, text.data(), static_cast<unsigned>(text.size())) == kNvmlSuccess)
            gpu.name = text.data();
        gpu.other_pids = other_processes(nvml, device);
        gpu.clock_event_reasons = clock_event_reasons(nvml, device);
        probe.gpus.push_back(std::move(gpu));
    }
    if (probe.gpus.empty()) probe.unavailable = "NVML opened none of its GPUs";
    return probe;
}

std::vector<EnvironmentFinding> check_environment(const fs::path& root, bool gpu) {
    std::vector<EnvironmentFinding> findings;
    findings.push_back(check_cpu_scaling(read_governors(root)));
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    findings.push_back(
        check_load(first_line((root / "proc/loadavg").string()), static_cast<int>(cpus)));
    if (gpu) {
        const GpuProbe probe = probe_gpus();
        findings.push_back(check_gpu_processes(probe));
        findings.push_back(check_gpu_clocks(probe));
    }
    return findings;
}

}  // namespace harness::run
