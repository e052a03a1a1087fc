// A backend's declared options (hb/options.hpp): the check of a value against its declaration,
// which the harness runs on a config and hb::Options on a session description, and the C view of
// the declaration that describe() publishes (ABI 2.4).
#include "hb/plugin.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

namespace {

const std::vector<hb::OptionSpec> kSpecs = {
    hb::threads_option(),
    hb::bool_option("fused", "fuse (default: true)"),
    hb::choice_option("layout", {"nhwc", "nchw"}, "layout (default: nhwc)"),
};

std::string error_of(const std::vector<hb_option>& given) {
    try {
        hb::Options(static_cast<int32_t>(given.size()), given.data(), kSpecs);
    } catch (const hb::Error& e) {
        EXPECT_EQ(e.status(), HB_UNSUPPORTED);
        return e.what();
    }
    return "";
}

TEST(OptionSpec, ValuesAreCheckedAgainstTheirType) {
    EXPECT_EQ(hb::option_problem(kSpecs[0], "8"), "");
    EXPECT_EQ(hb::option_problem(kSpecs[0], "0"), "expected an integer in [1, 1024], got '0'");
    EXPECT_EQ(hb::option_problem(kSpecs[0], "2.5"), "expected an integer in [1, 1024], got '2.5'");
    EXPECT_EQ(hb::option_problem(kSpecs[0], "99999999999999999999"),
              "expected an integer in [1, 1024], got '99999999999999999999'");
    for (const char* b : {"true", "false", "1", "0", "on", "off", "yes", "no"})
        EXPECT_EQ(hb::option_problem(kSpecs[1], b), "") << b;
    EXPECT_EQ(hb::option_problem(kSpecs[1], "True"), "expected true or false, got 'True'");
    EXPECT_EQ(hb::option_problem(kSpecs[2], "nchw"), "");
    EXPECT_EQ(hb::option_problem(kSpecs[2], "NCHW"), "expected one of nhwc, nchw, got 'NCHW'");
}

TEST(Options, UnknownAndIllTypedOptionsAreRefusedWhenTheSessionIsCreated) {
    EXPECT_EQ(error_of({{"thread", "2"}}),
              "unknown option 'thread' (known: threads, fused, layout)");
    EXPECT_EQ(error_of({{"fused", "maybe"}}),
              "option 'fused': expected true or false, got 'maybe'");
    EXPECT_EQ(error_of({{"threads", "2"}, {"layout", "nchw"}}), "");
}

TEST(Options, GettersReadTheValueOrTheFallback) {
    const hb_option given[] = {{"threads", "3"}, {"fused", "off"}};
    const hb::Options options(2, given, kSpecs);
    EXPECT_EQ(options.get_threads(), 3);
    EXPECT_FALSE(options.get_bool("fused", true));
    EXPECT_EQ(options.get_string("layout", "nhwc"), "nhwc");
    EXPECT_TRUE(options.has("fused"));
    EXPECT_FALSE(options.has("layout"));

    const hb::Options defaults(0, nullptr, kSpecs);
    EXPECT_EQ(defaults.get_threads(),
              static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    // Reading an option the plugin did not declare is the plugin's bug, not the config's.
    EXPECT_THROW(defaults.get_bool("undeclared", false), hb::Error);
}

TEST(InfoStore, PublishesTheDeclaredOptionsForTheHarness) {
    hb::detail::InfoStore store;
    store.info.name = "test";
    store.info.options = kSpecs;
    store.publish();
    const hb_plugin_info& c = store.c;
    EXPECT_EQ(c.option_size, sizeof(hb_option_spec));
    ASSERT_EQ(c.num_options, 3);
    EXPECT_STREQ(c.options[0].key, "threads");
    EXPECT_EQ(c.options[0].type, HB_OPTION_INT);
    EXPECT_EQ(c.options[0].min, 1);
    EXPECT_EQ(c.options[0].max, 1024);
    ASSERT_EQ(c.options[2].num_choices, 2);
    EXPECT_STREQ(c.options[2].choices[1], "nchw");
    EXPECT_STREQ(c.options[1].description, "fuse (default: true)");

    // An empty list declares nothing, unless the plugin says it takes no options.
    hb::detail::InfoStore undeclared;
    undeclared.publish();
    EXPECT_EQ(undeclared.c.option_size, 0u);
    hb::detail::InfoStore none;
    none.info.takes_no_options = true;
    none.publish();
    EXPECT_EQ(none.c.option_size, sizeof(hb_option_spec));
    EXPECT_EQ(none.c.num_options, 0);
}

}  // namespace
