// The checks of the machine's state when `harness run` starts: each on a fake /sys and /proc tree
// or a fake NVML answer, and NVML itself where there is none or a library that is not it.
#include "run/environment.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace {

namespace fs = std::filesystem;
using namespace harness::run;

// A fake root with /sys and /proc, removed after the test.
class FakeRoot : public ::testing::Test {
protected:
    void SetUp() override {
        root_ = fs::temp_directory_path() /
                ("environment_test." + std::to_string(::getpid()) + "." +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(root_);
    }
    void TearDown() override { fs::remove_all(root_); }

    void write(const std::string& path, const std::string& text) {
        fs::create_directories((root_ / path).parent_path());
        std::ofstream(root_ / path) << text;
    }
    void governor(int cpu, const std::string& name) {
        write("sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cpufreq/scaling_governor",
              name + "\n");
    }

    fs::path root_;
};

TEST_F(FakeRoot, ReadsTheGovernorOfEveryCpuInCpuOrder) {
    governor(10, "performance");
    governor(0, "performance");
    governor(2, "powersave");
    fs::create_directories(root_ / "sys/devices/system/cpu/cpu1");  // no cpufreq
    fs::create_directories(root_ / "sys/devices/system/cpu/cpufreq/policy0");
    write("sys/devices/system/cpu/cpuidle/current_driver", "none\n");
    EXPECT_EQ(read_governors(root_),
              (std::vector<std::string>{"performance", "powersave", "performance"}));
}

TEST_F(FakeRoot, NoCpufreqIsNoGovernor) {
    fs::create_directories(root_ / "sys/devices/system/cpu/cpu0");
    EXPECT_TRUE(read_governors(root_).empty());
    EXPECT_TRUE(read_governors(root_ / "missing").empty());
}

TEST(CpuScaling, WarnsWhenAnyCpuIsNotAtPerformance) {
    const EnvironmentFinding scaled =
        check_cpu_scaling({"performance", "powersave", "schedutil", "powersave"});
    EXPECT_EQ(scaled.check, "cpu_scaling");
    EXPECT_TRUE(scaled.warning);
    EXPECT_EQ(scaled.state, "powersave/schedutil");
    EXPECT_NE(scaled.message.find("CPU frequency scaling is enabled"), std::string::npos);
    EXPECT_NE(scaled.message.find("3 of 4 CPUs"), std::string::npos) << scaled.message;

    const EnvironmentFinding fixed = check_cpu_scaling({"performance", "performance"});
    EXPECT_FALSE(fixed.warning);
    EXPECT_EQ(fixed.state, "performance");
}

TEST(CpuScaling, WithoutCpufreqItIsUnknownAndNoWarning) {
    const EnvironmentFinding f = check_cpu_scaling({});
    EXPECT_FALSE(f.warning);
    EXPECT_EQ(f.state, "unknown");
}

TEST(Load, TheIdleLimitIsHalfACpuOrATenthOfTheCpus) {
    EXPECT_DOUBLE_EQ(idle_load_limit(1), 0.5);
    EXPECT_DOUBLE_EQ(idle_load_limit(2), 0.5);
    EXPECT_DOUBLE_EQ(idle_load_limit(16), 1.6);
    EXPECT_DOUBLE_EQ(idle_load_limit(96), 9.6);
    EXPECT_DOUBLE_EQ(idle_load_limit(0), 0.5);
}

TEST(Load, WarnsAboveTheIdleLimit) {
    EXPECT_FALSE(check_load("0.42 0.30 0.25 1/123 4567", 2).warning);
    EXPECT_FALSE(check_load("1.50 2.00 2.00 1/123 4567", 16).warning);
    const EnvironmentFinding busy = check_load("8.84 7.51 6.83 11/141 789", 2);
    EXPECT_EQ(busy.check, "load_average");
    EXPECT_TRUE(busy.warning);
    EXPECT_EQ(busy.state, "8.84");
    EXPECT_NE(busy.message.find("load average 8.84 on 2 CPUs"), std::string::npos) << busy.message;
    EXPECT_TRUE(check_load("1.70 0 0 1/1 1", 16).warning);
}

TEST(Load, UnreadableIsUnknownAndNoWarning) {
    for (const char* text : {"", "busy", "-1 0 0"}) {
        const EnvironmentFinding f = check_load(text, 4);
        EXPECT_FALSE(f.warning) << text;
        EXPECT_EQ(f.state, "unknown") << text;
    }
}

TEST_F(FakeRoot, ChecksTheTreeItIsGiven) {
    governor(0, "powersave");
    write("proc/loadavg", "0.01 0.02 0.03 1/99 42\n");
    const auto findings = check_environment(root_, /*gpu=*/false);
    ASSERT_EQ(findings.size(), 2u);  // no GPU checks for a run on CPUs only
    EXPECT_EQ(findings[0].check, "cpu_scaling");
    EXPECT_EQ(findings[0].state, "powersave");
    EXPECT_TRUE(findings[0].warning);
    EXPECT_EQ(findings[1].check, "load_average");
    EXPECT_EQ(findings[1].state, "0.01");
    EXPECT_FALSE(findings[1].warning);
}

TEST(GpuClocks, OnlySlowdownsCount) {
    EXPECT_EQ(slowdown_reasons(0), "");
    EXPECT_EQ(slowdown_reasons(0x1 | 0x2 | 0x10 | 0x100), "");  // idle, app clocks, sync, display
    EXPECT_EQ(slowdown_reasons(0x4 | 0x20 | 0x1), "sw_power_cap+sw_thermal_slowdown");
    EXPECT_EQ(slowdown_reasons(0x8 | 0x40 | 0x80),
              "hw_slowdown+hw_thermal_slowdown+hw_power_brake_slowdown");
}

GpuProbe two_gpus() {
    GpuProbe probe;
    probe.gpus.push_back({0, "NVIDIA H200", {}, 0x1});
    probe.gpus.push_back({1, "NVIDIA H200", {}, 0x1});
    return probe;
}

TEST(GpuClocks, WarnsWhenAGpuIsSlowedDown) {
    GpuProbe probe = two_gpus();
    EXPECT_FALSE(check_gpu_clocks(probe).warning);
    EXPECT_EQ(check_gpu_clocks(probe).state, "full");

    probe.gpus[1].clock_event_reasons = 0x1 | 0x40;
    const EnvironmentFinding f = check_gpu_clocks(probe);
    EXPECT_EQ(f.check, "gpu_clocks");
    EXPECT_TRUE(f.warning);
    EXPECT_EQ(f.state, "hw_thermal_slowdown");
    EXPECT_NE(f.message.find("GPU 1 (NVIDIA H200): hw_thermal_slowdown"), std::string::npos)
        << f.message;
}

TEST(GpuClocks, UnreadIsUnknown) {
    GpuProbe probe = two_gpus();
    for (auto& gpu : probe.gpus) gpu.clock_event_reasons.reset();
    EXPECT_FALSE(check_gpu_clocks(probe).warning);
    EXPECT_EQ(check_gpu_clocks(probe).state, "unknown");
}

TEST(GpuProcesses, WarnsAboutOtherProcesses) {
    GpuProbe probe = two_gpus();
    EXPECT_FALSE(check_gpu_processes(probe).warning);
    EXPECT_EQ(check_gpu_processes(probe).state, "0");

    probe.gpus[0].other_pids = {4242, 4343};
    probe.gpus[1].other_pids = {77};
    const EnvironmentFinding f = check_gpu_processes(probe);
    EXPECT_EQ(f.check, "gpu_processes");
    EXPECT_TRUE(f.warning);
    EXPECT_EQ(f.state, "3");
    EXPECT_NE(f.message.find("3 other processes"), std::string::npos) << f.message;
    EXPECT_NE(f.message.find("GPU 0 (NVIDIA H200): pid 4242, 4343; GPU 1"), std::string::npos)
        << f.message;
}

TEST(Gpu, WithoutNvmlBothChecksAreUnknownAndNoWarning) {
    GpuProbe probe;
    probe.unavailable = "no NVIDIA driver (libnvidia-ml.so.1 not found)";
    for (const EnvironmentFinding& f : {check_gpu_processes(probe), check_gpu_clocks(probe)}) {
        EXPECT_FALSE(f.warning) << f.check;
        EXPECT_EQ(f.state, "unknown") << f.check;
        EXPECT_NE(f.message.find("no NVIDIA driver"), std::string::npos) << f.message;
    }
}

TEST(Gpu, AMissingLibraryIsNoDriver) {
    const GpuProbe probe = probe_gpus("libhb_no_such_nvml.so.1");
    EXPECT_TRUE(probe.gpus.empty());
    EXPECT_NE(probe.unavailable.find("no NVIDIA driver"), std::string::npos) << probe.unavailable;
}

TEST(Gpu, ALibraryThatIsNotNvmlIsRefused) {
    const GpuProbe probe = probe_gpus(std::string(HB_FAKE_PLUGIN_DIR) + "/hb_fake_good.so");
    EXPECT_TRUE(probe.gpus.empty());
    EXPECT_NE(probe.unavailable.find("has no nvmlInit_v2"), std::string::npos) << probe.unavailable;
}

// This machine's own NVML, whatever it has: an answer or a reason, never an exception.
TEST(Gpu, ThisMachineAnswersOrSaysWhyNot) {
    const GpuProbe probe = probe_gpus();
    EXPECT_TRUE(probe.unavailable.empty() != probe.gpus.empty()) << probe.unavailable;
}

}  // namespace
