// The states of the machine that spoil timings, checked once when `harness run` starts
// (docs/design.md §6): CPU frequency scaling, the load average, other processes on the GPU and
// throttled GPU clocks. Each check is a function of what it reads, so that tests hand it a fake
// /sys and /proc tree or a fake NVML answer.
#pragma once

#include "output/record.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace harness::run {

using output::EnvironmentFinding;

// CPU frequency scaling. The governor of every CPU that has one, in CPU order, from
// ROOT/sys/devices/system/cpu/cpuN/cpufreq/scaling_governor; empty without cpufreq (most
// virtual machines).
std::vector<std::string> read_governors(const std::filesystem::path& root);
// A warning when any governor is not "performance"; "unknown", no warning, when there is none.
EnvironmentFinding check_cpu_scaling(const std::vector<std::string>& governors);

// The load average. A machine is idle below max(kIdleLoadFloor, kIdleLoadPerCpu * cpus).
inline constexpr double kIdleLoadFloor = 0.5;
inline constexpr double kIdleLoadPerCpu = 0.1;
double idle_load_limit(int cpus);
// From the text of /proc/loadavg ("0.42 0.30 0.25 1/123 4567"): a warning when its 1-minute load
// is above the idle limit; "unknown", no warning, when it cannot be read.
EnvironmentFinding check_load(const std::string& loadavg, int cpus);

// The GPUs as NVML sees them.
struct GpuState {
    unsigned index = 0;
    std::string name;
    std::vector<unsigned> other_pids;             // compute processes other than this one
    std::optional<uint64_t> clock_event_reasons;  // nvmlClocksEventReason* bits, when read
};
struct GpuProbe {
    std::string unavailable;  // why NVML told nothing ("" when it answered)
    std::vector<GpuState> gpus;
};
// Asks NVML (`library`, opened at run time, never linked) about every GPU; a GpuProbe that says
// why not when the library, the driver or a GPU is missing.
GpuProbe probe_gpus(const std::string& library = "libnvidia-ml.so.1");

// The nvmlClocksEventReason bits that lower the clocks below what the GPU can run (power cap,
// thermal and hardware slowdowns), by name joined with '+' ("" for none): idle, application
// clocks, sync boost and display clocks are no slowdown.
std::string slowdown_reasons(uint64_t clock_event_reasons);
// A warning when any GPU runs another compute process; "unknown", no warning, without NVML.
EnvironmentFinding check_gpu_processes(const GpuProbe& probe);
// A warning when any GPU's clocks are slowed down; "unknown", no warning, without NVML.
EnvironmentFinding check_gpu_clocks(const GpuProbe& probe);

// Every check on this machine (ROOT "/"); the GPU's only when `gpu` (some entry of the config runs
// on a GPU).
std::vector<EnvironmentFinding> check_environment(const std::filesystem::path& root, bool gpu);

}  // namespace harness::run
