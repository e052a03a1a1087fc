// The SDK's description of the processor, which CPU backends put in their device list.
#include "hb/cpu.hpp"

#include <gtest/gtest.h>

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

}  // namespace
