// The SDK's checks every plugin runs first: the session description (hb::check_session_desc) and
// its device name (hb::parse_device, hb::require_cpu).
#include "hb/plugin.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <string>

namespace {

hb_graph some_graph = hb_empty_graph();

struct Description {
    hb_optimizer optimizer{};
    hb_session_desc desc{};
    Description() {
        optimizer.variant = HB_RMSPROP_TORCH;
        optimizer.learning_rate = 2.5e-4f;
        optimizer.alpha = 0.99f;
        optimizer.eps = 1e-8f;
        desc.struct_size = sizeof(desc);
        desc.graph = &some_graph;
        desc.optimizer = &optimizer;
        desc.device = "cpu";
        desc.placement = HB_PLACEMENT_DEVICE;
    }
};

// The error's message, or "" when the description passes; `status` gets the error's status.
std::string refusal(const hb_session_desc& desc, hb_status* status = nullptr) {
    try {
        hb::check_session_desc(desc);
        return "";
    } catch (const hb::Error& e) {
        if (status) *status = e.status();
        return e.what();
    }
}

TEST(SessionDescription, AValidOnePasses) {
    Description d;
    EXPECT_EQ(refusal(d.desc), "");
}

TEST(SessionDescription, OneFromAnOlderHarnessPassesAndAsksForNoInputGradient) {
    Description d;
    d.desc.input_gradient = 1;
    EXPECT_TRUE(hb::wants_input_gradient(d.desc));
    // ABI 2.2's description ends before `input_gradient`: whatever lies beyond is not read.
    d.desc.struct_size = offsetof(hb_session_desc, input_gradient);
    EXPECT_EQ(refusal(d.desc), "");
    EXPECT_FALSE(hb::wants_input_gradient(d.desc));
}

TEST(SessionDescription, EachDefectIsNamed) {
    Description small;
    small.desc.struct_size = 8;
    EXPECT_NE(refusal(small.desc).find("too small (8 bytes"), std::string::npos);

    Description no_graph;
    no_graph.desc.graph = nullptr;
    EXPECT_NE(refusal(no_graph.desc).find("no graph or optimizer"), std::string::npos);

    Description host;
    host.desc.placement = HB_PLACEMENT_HOST;
    EXPECT_EQ(refusal(host.desc), "");

    Description alpha;
    alpha.optimizer.alpha = 1.5f;
    EXPECT_NE(refusal(alpha.desc).find("alpha in [0, 1]"), std::string::npos);
    Description rate;
    rate.optimizer.learning_rate = -1;
    EXPECT_NE(refusal(rate.desc).find("must be non-negative"), std::string::npos);
}

TEST(DeviceName, CpuAndCudaDevices) {
    EXPECT_FALSE(hb::parse_device("cpu", "x").cuda);
    const hb::DeviceName cuda = hb::parse_device("cuda", "x");
    EXPECT_TRUE(cuda.cuda);
    EXPECT_EQ(cuda.index, 0);
    EXPECT_EQ(hb::parse_device("cuda:12", "x").index, 12);
    for (const char* bad : {"gpu", "cuda:", "cuda:x", "cuda:-1", "cuda:1 ", "cuda:99999", ""}) {
        try {
            hb::parse_device(bad, "the test backend");
            ADD_FAILURE() << "accepted '" << bad << "'";
        } catch (const hb::Error& e) {
            EXPECT_EQ(e.status(), HB_UNAVAILABLE);
            EXPECT_NE(std::string(e.what()).find("the test backend knows the devices"),
                      std::string::npos)
                << e.what();
        }
    }
    EXPECT_THROW(hb::parse_device(nullptr, "x"), hb::Error);
}

TEST(DeviceName, ACpuOnlyBackendRejectsCuda) {
    Description d;
    d.desc.device = "cpu";
    EXPECT_NO_THROW(hb::require_cpu(d.desc, "the test backend"));
    d.desc.device = "cuda:0";
    try {
        hb::require_cpu(d.desc, "the test backend");
        ADD_FAILURE() << "accepted cuda:0";
    } catch (const hb::Error& e) {
        EXPECT_EQ(e.status(), HB_UNAVAILABLE);
        EXPECT_NE(std::string(e.what()).find("runs on the CPU only"), std::string::npos);
    }
}

}  // namespace
