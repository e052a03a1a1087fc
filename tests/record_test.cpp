#include "results/record.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace hr = harness::results;

namespace {

TEST(Status, NamesRoundTrip) {
    for (hr::Status s :
         {hr::Status::ok, hr::Status::skipped, hr::Status::failed, hr::Status::crashed,
          hr::Status::timeout, hr::Status::oom, hr::Status::mismatch, hr::Status::interrupted}) {
        EXPECT_EQ(hr::status_from_string(hr::to_string(s)), s);
    }
    EXPECT_STREQ(hr::to_string(hr::Status::oom), "oom");
    EXPECT_STREQ(hr::to_string(hr::Status::interrupted), "interrupted");
    EXPECT_FALSE(hr::status_from_string("fine").has_value());
}

TEST(Provenance, EnvironmentWarningsAreTheFindingsThatAreWarnings) {
    hr::Provenance p;
    EXPECT_EQ(hr::environment_warnings(p), "");
    EXPECT_EQ(hr::environment_warning_lines(p), "");
    p.environment = {{"cpu_scaling", "unknown", "CPU frequency scaling unknown", false},
                     {"load_average", "3.20", "load average 3.20 on 2 CPUs", true},
                     {"gpu_processes", "2", "2 other processes on the GPU", true}};
    EXPECT_EQ(hr::environment_warnings(p), "load_average=3.20;gpu_processes=2");
    EXPECT_EQ(hr::environment_warning_lines(p),
              "***WARNING*** load average 3.20 on 2 CPUs\n"
              "***WARNING*** 2 other processes on the GPU\n");
}

TEST(BackendRun, FirstAndLastLoss) {
    hr::BackendRun r;
    EXPECT_TRUE(std::isnan(r.first_loss()));
    EXPECT_TRUE(std::isnan(r.last_loss()));
    r.warmup_losses = {9, 8};
    EXPECT_EQ(r.first_loss(), 9);
    EXPECT_EQ(r.last_loss(), 8);
    r.losses = {7, 6, 5};
    EXPECT_EQ(r.first_loss(), 9);
    EXPECT_EQ(r.last_loss(), 5);
    r.warmup_losses.clear();
    EXPECT_EQ(r.first_loss(), 7);
}

}  // namespace
