// hb/json.hpp, the SDK's writer of plugin manifests: what it writes parses as the JSON meant,
// whatever the strings hold.
#include "hb/json.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <limits>
#include <string>

namespace {

TEST(ManifestJson, StringsAreEscaped) {
    const std::string awkward = "NVIDIA \"H200\" \\ tab\t newline\n bell\x07";
    const auto parsed = nlohmann::json::parse(hb::json_string(awkward));
    EXPECT_EQ(parsed.get<std::string>(), awkward);
}

TEST(ManifestJson, ObjectsKeepOrderAndNest) {
    hb::JsonArray list;
    list.add_string("a").add_string("b\"c");
    EXPECT_TRUE(hb::JsonArray().empty());
    hb::JsonObject inner;
    inner.add("n", int64_t{-3}).add("bytes", uint64_t{1} << 40);
    hb::JsonObject m;
    m.add_string("device_name", "x\"y")
        .add_bool("cuda_graphs", true)
        .add("ratio", 0.25)
        .add("not_finite", std::numeric_limits<double>::quiet_NaN())
        .add("inner", inner.str())
        .add("list", list.str())
        .add("empty", hb::JsonArray().str());
    EXPECT_EQ(m.str().rfind("{\"device_name\": ", 0), 0u) << m.str();
    const auto j = nlohmann::json::parse(m.str());
    EXPECT_EQ(j.at("device_name"), "x\"y");
    EXPECT_EQ(j.at("cuda_graphs"), true);
    EXPECT_DOUBLE_EQ(j.at("ratio").get<double>(), 0.25);
    EXPECT_TRUE(j.at("not_finite").is_null());
    EXPECT_EQ(j.at("inner").at("n"), -3);
    EXPECT_EQ(j.at("inner").at("bytes"), uint64_t{1} << 40);
    EXPECT_EQ(j.at("list"), nlohmann::json::array({"a", "b\"c"}));
    EXPECT_TRUE(j.at("empty").empty());
    EXPECT_LT(m.str().find("\"cuda_graphs\""), m.str().find("\"ratio\""));
}

}  // namespace
