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
    hb::bool_option("fused", true, "fuse"),
    hb::choice_option("layout", {"nhwc", "nchw"}, "nhwc", "layout"),
    hb::bool_option("onednn", std::nullopt, "require oneDNN (unset: either)"),
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
              "unknown option 'thread' (known: threads, fused, layout, onednn)");
    EXPECT_EQ(error_of({{"fused", "maybe"}}),
              "option 'fused': expected true or false, got 'maybe'");
    EXPECT_EQ(error_of({{"threads", "2"}, {"layout", "nchw"}}), "");
}

TEST(Options, ARetiredNameIsRefusedWithTheNameThatReplacedIt) {
    // kSpecs declares layout: channels_last is what it once was.
    EXPECT_EQ(error_of({{"channels_last", "true"}}),
              "option 'channels_last' is now 'layout': write layout: nhwc for channels_last: "
              "true, nchw for false");
    // A retired name whose replacement the plugin does not declare is simply unknown.
    EXPECT_EQ(error_of({{"fused_bn_relu", "true"}}),
              "unknown option 'fused_bn_relu' (known: threads, fused, layout, onednn)");
    // Each says what to write, beginning with the name that replaced it.
    for (const hb::RetiredOption& r : hb::retired_options()) {
        EXPECT_STRNE(r.key, r.replacement);
        EXPECT_EQ(std::string(r.write).rfind(r.replacement, 0), 0u) << r.key;
    }
}

TEST(Options, GettersReadTheValueOrTheDeclaredDefault) {
    const hb_option given[] = {{"threads", "3"}, {"fused", "off"}, {"onednn", "on"}};
    const hb::Options options(3, given, kSpecs);
    EXPECT_EQ(options.get_threads(), 3);
    EXPECT_FALSE(options.get_bool("fused"));
    EXPECT_EQ(options.get_string("layout"), "nhwc");
    EXPECT_TRUE(options.get_bool("onednn"));
    EXPECT_TRUE(options.has("fused"));
    EXPECT_FALSE(options.has("layout"));

    const hb::Options defaults(0, nullptr, kSpecs);
    EXPECT_TRUE(defaults.get_bool("fused"));
    EXPECT_EQ(defaults.get_threads(),
              static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    // Reading an option the plugin did not declare, or one unset without a default, is the
    // plugin's bug, not the config's.
    EXPECT_THROW(defaults.get_bool("undeclared"), hb::Error);
    EXPECT_THROW(defaults.get_bool("onednn"), hb::Error);
}

TEST(OptionSpec, DefaultsAreWrittenAsAConfigWritesThem) {
    EXPECT_EQ(hb::bool_option("x", false, "").default_value, "false");
    EXPECT_EQ(hb::int_option("n", 1, 8, 4, "").default_value, "4");
    EXPECT_EQ(hb::choice_option("c", {"a", "b"}, "b", "").default_value, "b");
    EXPECT_EQ(hb::threads_option().default_value, "");
}

// A declared default the option itself refuses is the plugin's defect, found when any session
// reads its options.
TEST(Options, ADeclaredDefaultOutsideItsOwnOptionIsAPluginDefect) {
    const std::vector<hb::OptionSpec> specs = {hb::int_option("n", 1, 8, 9, "n")};
    try {
        hb::Options(0, nullptr, specs);
        FAIL() << "accepted";
    } catch (const hb::Error& e) {
        EXPECT_STREQ(e.what(),
                     "option 'n': its declared default: expected an integer in [1, 8], got '9'");
        EXPECT_NE(e.status(), HB_UNSUPPORTED);
    }
}

TEST(InfoStore, PublishesTheDeclaredOptionsForTheHarness) {
    hb::detail::InfoStore store;
    store.info.name = "test";
    store.info.options = kSpecs;
    store.publish();
    const hb_plugin_info& c = store.c;
    EXPECT_EQ(c.option_size, sizeof(hb_option_spec));
    ASSERT_EQ(c.num_options, 4);
    EXPECT_STREQ(c.options[0].key, "threads");
    EXPECT_EQ(c.options[0].type, HB_OPTION_INT);
    EXPECT_EQ(c.options[0].min, 1);
    EXPECT_EQ(c.options[0].max, 1024);
    ASSERT_EQ(c.options[2].num_choices, 2);
    EXPECT_STREQ(c.options[2].choices[1], "nchw");
    EXPECT_STREQ(c.options[1].description, "fuse");
    EXPECT_STREQ(c.options[1].default_value, "true");
    EXPECT_STREQ(c.options[2].default_value, "nhwc");
    EXPECT_EQ(c.options[3].default_value, nullptr);

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
