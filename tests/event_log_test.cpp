#include "hb/profile.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

TEST(EventLog, RecordsNothingWhileOff) {
    hb::EventLog log;
    log.begin_step();
    { hb::EventLog::Scope s(log, "convolution", 0, HB_PHASE_FORWARD); }
    EXPECT_TRUE(log.events().empty());
}

TEST(EventLog, TimesScopesAndKeepsEventsTimedElsewhere) {
    hb::EventLog log;
    log.set_enabled(true);
    log.begin_step();
    { hb::EventLog::Scope s(log, "convolution", 3, HB_PHASE_BACKWARD_DATA); }
    log.add(std::string("kernel"), -1, HB_PHASE_UPDATE, 1.5, 2.5, "stream 0");
    ASSERT_EQ(log.events().size(), 2u);
    const hb_event& scoped = log.events()[0];
    EXPECT_STREQ(scoped.name, "convolution");
    EXPECT_EQ(scoped.layer, 3);
    EXPECT_EQ(scoped.phase, HB_PHASE_BACKWARD_DATA);
    EXPECT_STREQ(scoped.track, "main");
    EXPECT_LE(0.0, scoped.start_ms);
    EXPECT_LE(scoped.start_ms, scoped.end_ms);
    EXPECT_STREQ(log.events()[1].track, "stream 0");
    EXPECT_DOUBLE_EQ(log.events()[1].end_ms, 2.5);
    log.begin_step();  // the next step starts empty
    EXPECT_TRUE(log.events().empty());
}

TEST(EventLog, KeepsOneCopyOfEachNameForItsLife) {
    hb::EventLog log;
    log.set_enabled(true);
    log.begin_step();
    for (int i = 0; i < 1000; ++i)
        log.add("op " + std::to_string(i % 7), 0, HB_PHASE_FORWARD, 0, 1);
    const char* first = log.events()[0].name;
    EXPECT_EQ(log.events()[7].name, first);
    EXPECT_STREQ(first, "op 0");
    EXPECT_STREQ(log.events()[999].name, "op 5");
    log.set_enabled(false);
    EXPECT_TRUE(log.events().empty());
    EXPECT_STREQ(first, "op 0");  // names outlive the events that used them
}

TEST(PhaseNames, AreTheDesignsWords) {
    EXPECT_STREQ(hb::to_string(HB_PHASE_BACKWARD_WEIGHTS), "backward_weights");
    EXPECT_STREQ(hb::to_string(HB_PHASE_TRANSFER), "transfer");
    EXPECT_STREQ(hb::to_string(HB_PHASE_OTHER), "other");
}

}  // namespace
