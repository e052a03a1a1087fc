#include "output/record.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace {

TEST(Status, NamesRoundTrip) {
    for (harness::output::Status s :
         {harness::output::Status::ok, harness::output::Status::skipped,
          harness::output::Status::failed, harness::output::Status::crashed,
          harness::output::Status::timeout, harness::output::Status::oom,
          harness::output::Status::mismatch, harness::output::Status::interrupted}) {
        EXPECT_EQ(harness::output::status_from_string(harness::output::to_string(s)), s);
    }
    EXPECT_STREQ(harness::output::to_string(harness::output::Status::oom), "oom");
    EXPECT_STREQ(harness::output::to_string(harness::output::Status::interrupted), "interrupted");
    EXPECT_FALSE(harness::output::status_from_string("fine").has_value());
}

TEST(Provenance, EnvironmentWarningsAreTheFindingsThatAreWarnings) {
    harness::output::Provenance p;
    EXPECT_EQ(harness::output::environment_warnings(p), "");
    EXPECT_EQ(harness::output::environment_warning_lines(p), "");
    p.environment = {{"cpu_scaling", "unknown", "CPU frequency scaling unknown", false},
                     {"load_average", "3.20", "load average 3.20 on 2 CPUs", true},
                     {"gpu_processes", "2", "2 other processes on the GPU", true}};
    EXPECT_EQ(harness::output::environment_warnings(p), "load_average=3.20;gpu_processes=2");
    EXPECT_EQ(harness::output::environment_warning_lines(p),
              "***WARNING*** load average 3.20 on 2 CPUs\n"
              "***WARNING*** 2 other processes on the GPU\n");
}

TEST(BackendRun, FirstAndLastLoss) {
    harness::output::BackendRun r;
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
