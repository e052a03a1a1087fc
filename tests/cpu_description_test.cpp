// The SDK's description of the processor, which CPU backends put in their device list.
#include "hb/cpu.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <thread>

namespace {

TEST(CpuDescription, NamesTheModelAndTheHardwareThreads) {
    const std::string threads = std::to_string(std::thread::hardware_concurrency());
    const std::string plain = hb::cpu_description();
    EXPECT_FALSE(plain.empty());
    EXPECT_NE(plain.find(" (" + threads + " hardware threads)"), std::string::npos) << plain;
    const std::string detailed = hb::cpu_description("ISA avx2");
    EXPECT_NE(detailed.find(" (" + threads + " hardware threads, ISA avx2)"), std::string::npos)
        << detailed;
    EXPECT_EQ(plain.substr(0, plain.find(" (")), detailed.substr(0, detailed.find(" (")));
}

// The features as /proc/cpuinfo's "flags" line names them, every processor having some.
TEST(CpuFlags, AreTheKernelsNamesOfTheFeatures) {
    const std::set<std::string> flags = hb::cpu_flags();
    if (hb::cpuinfo_field("flags").empty()) GTEST_SKIP() << "no flags line in /proc/cpuinfo here";
    EXPECT_FALSE(flags.empty());
#if defined(__x86_64__)
    EXPECT_EQ(flags.count("sse2"), 1u);  // every x86-64 processor has it
#endif
    for (const std::string& f : flags) EXPECT_EQ(f.find_first_of(" :\t"), std::string::npos) << f;
}

}  // namespace
