// The communicator `nccl`: what it says in words, and that its module loads here with every symbol
// resolved and refuses what it cannot average before touching a device. Averaging itself needs a
// GPU and is not tested here.
#include "parallel/communicator.hpp"
#include "parallel/nccl/nccl_text.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>

namespace fs = std::filesystem;
using namespace harness::parallel;

namespace {

std::string error_of(const std::function<void()>& call) {
    try {
        call();
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST(NcclText, DeviceOrdinal) {
    EXPECT_EQ(nccl_device_ordinal("cuda:0"), 0);
    EXPECT_EQ(nccl_device_ordinal("cuda:3"), 3);
    EXPECT_EQ(nccl_device_ordinal("cuda:12"), 12);
    EXPECT_EQ(nccl_device_ordinal("cuda:999999999"), 999999999);
}

TEST(NcclText, DeviceOrdinalRefusesOtherNames) {
    for (const char* name : {"cpu", "", "cuda", "cuda:", "cuda:x", "cuda:-1", "cuda:1x", " cuda:1",
                             "cuda: 1", "cuda:+1", "CUDA:0", "cuda:1234567890"}) {
        EXPECT_THROW(nccl_device_ordinal(name), std::runtime_error) << name;
    }
    EXPECT_EQ(error_of([] { nccl_device_ordinal("cpu"); }),
              "communicator nccl needs a CUDA device \"cuda:N\"; the session's device is \"cpu\"");
}

TEST(NcclText, Version) {
    EXPECT_EQ(nccl_version_text(22809), "NCCL 2.28.9");
    EXPECT_EQ(nccl_version_text(23007), "NCCL 2.30.7");
    EXPECT_EQ(nccl_version_text(20901), "NCCL 2.9.1");
    EXPECT_EQ(nccl_version_text(2804), "NCCL 2.8.4");  // the code before NCCL 2.9
}

TEST(NcclText, Algorithm) {
    const std::string call = "ncclAllReduce (ncclAvg) per tensor, grouped per bucket";
    EXPECT_EQ(nccl_algorithm_text(nullptr).rfind(call, 0), 0u);
    EXPECT_NE(nccl_algorithm_text(nullptr).find("NCCL's choice (NCCL_ALGO=auto)"),
              std::string::npos);
    EXPECT_EQ(nccl_algorithm_text(""), nccl_algorithm_text(nullptr));
    EXPECT_NE(nccl_algorithm_text("Ring").find("(NCCL_ALGO=Ring)"), std::string::npos);
}

class NcclModuleTest : public ::testing::Test {
protected:
    void SetUp() override {
        const fs::path dir = HB_COMMUNICATOR_DIR;
        const fs::path not_built = dir / "libhb_comm_nccl.not-built";
        if (fs::exists(not_built)) {
            std::ifstream in(not_built);
            std::string reason;
            std::getline(in, reason);
            GTEST_SKIP() << "communicator nccl " << reason;
        }
        const fs::path file = dir / "libhb_comm_nccl.so";
        ASSERT_TRUE(fs::exists(file)) << file << " missing, and no libhb_comm_nccl.not-built";
        // RTLD_NOW: every symbol of the module and of the libraries it needs resolves here.
        handle_ = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
        ASSERT_NE(handle_, nullptr) << dlerror();
        auto* entry =
            reinterpret_cast<CommunicatorModule* (*)()>(dlsym(handle_, HB_COMMUNICATOR_ENTRY));
        ASSERT_NE(entry, nullptr) << dlerror();
        module_ = entry();
        ASSERT_NE(module_, nullptr);
    }

    // Never closed, as by the harness's loader.
    void* handle_ = nullptr;
    CommunicatorModule* module_ = nullptr;
};

TEST_F(NcclModuleTest, Describes) {
    EXPECT_EQ(module_->name(), "nccl");
    EXPECT_EQ(module_->version().rfind("NCCL 2.", 0), 0u) << module_->version();
    EXPECT_NE(module_->algorithm().find("ncclAllReduce (ncclAvg)"), std::string::npos);
    EXPECT_EQ(module_->world(), nullptr);
}

TEST_F(NcclModuleTest, RefusesWhatItCannotAverage) {
    SingleWorld world;
    float values[4] = {};
    int stream = 0;  // never used as a stream: every refusal comes before any CUDA call
    CommunicatorSetup setup;
    setup.world = &world;
    setup.buffers = {{0, HB_MEMORY_DEVICE, values, 4}, {1, HB_MEMORY_HOST, values, 4}};
    setup.buckets = {{0, 2, 8}};
    setup.stream = &stream;
    setup.device = "cuda:0";
    EXPECT_EQ(error_of([&] { module_->make(setup); }),
              "communicator nccl averages device memory; the plugin's gradients are in host "
              "memory (use communicator: mpi)");

    setup.buffers[1].memory = HB_MEMORY_DEVICE;
    setup.stream = nullptr;
    EXPECT_NE(error_of([&] { module_->make(setup); }).find("needs the session's CUDA stream"),
              std::string::npos);

    setup.stream = &stream;
    setup.device = "cpu";
    EXPECT_EQ(error_of([&] { module_->make(setup); }),
              "communicator nccl needs a CUDA device \"cuda:N\"; the session's device is \"cpu\"");
}
