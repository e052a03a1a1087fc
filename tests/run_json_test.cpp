#include "output/run_json.hpp"
#include "results_samples.hpp"

#include <gtest/gtest.h>

namespace {

using namespace harness::testing;

TEST(RunJson, BackendRunRoundTripsThroughText) {
    harness::output::BackendRun r = full_run();
    r.status = harness::output::Status::mismatch;
    r.message = "grad pre.conv.weight: max rel err 3e-2";
    r.nonfinite_loss = true;
    r.warmup_losses = {kNaN, kInf};
    r.losses = {-kInf, 0.1, 1e-300, kNaN};
    r.samples_ms.push_back(kInf);
    r.stats.cv = kNaN;
    r.log = "I0000 a library's line\n";

    const nlohmann::json j = harness::output::to_json(r);
    EXPECT_TRUE(j.at("manifest").is_object());
    EXPECT_EQ(j.at("losses").at(0), "-inf");
    EXPECT_EQ(j.at("status"), "mismatch");
    const harness::output::BackendRun back =
        harness::output::backend_run_from_json(nlohmann::json::parse(j.dump()));
    expect_same(r, back);

    r.log.clear();  // a row whose libraries wrote nothing has no "log"
    EXPECT_FALSE(harness::output::to_json(r).contains("log"));
}

// A plugin's message may hold bytes that are not UTF-8: every JSON output stays valid.
TEST(RunJson, TextReplacesBytesThatAreNotUtf8) {
    const nlohmann::json j = {{"message", std::string("bad \xff byte")}};
    EXPECT_EQ(harness::output::json_text(j), "{\"message\":\"bad \xef\xbf\xbd byte\"}");
    EXPECT_NE(harness::output::json_text(j, 2).find("\n  \"message\""), std::string::npos);
}

TEST(RunJson, ManifestThatIsNotJsonStaysText) {
    for (const std::string& m : {std::string("algo=winograd; layout=NHWC"), std::string("{}"),
                                 std::string(""), std::string("\"quoted\"")}) {
        harness::output::BackendRun r = skipped_run();
        r.manifest_json = m;
        EXPECT_EQ(harness::output::backend_run_from_json(harness::output::to_json(r)).manifest_json,
                  m);
    }
}

TEST(RunJson, RejectsUnknownStatusAndBadNumbers) {
    nlohmann::json j = harness::output::to_json(full_run());
    j["status"] = "great";
    EXPECT_THROW(harness::output::backend_run_from_json(j), nlohmann::json::exception);
    j = harness::output::to_json(full_run());
    j["losses"] = {"NaN?"};
    EXPECT_THROW(harness::output::backend_run_from_json(j), nlohmann::json::exception);
    j = harness::output::to_json(full_run());
    j.erase("samples_ms");
    EXPECT_THROW(harness::output::backend_run_from_json(j), nlohmann::json::exception);
}

// A paired round's step_sequence round-trips; one that is not places from 0 is read without.
TEST(RunJson, AStepSequenceRoundTripsAndAnInvalidOneIsLeftOut) {
    harness::output::BackendRun r = full_run();
    r.step_sequence = {0, 4, 7};
    nlohmann::json j = harness::output::to_json(r);
    EXPECT_EQ(harness::output::backend_run_from_json(nlohmann::json::parse(j.dump())).step_sequence,
              r.step_sequence);
    for (const nlohmann::json& bad :
         {nlohmann::json::array({1.5}), nlohmann::json::array({-1}), nlohmann::json::array({1e300}),
          nlohmann::json("0 4 7"), nlohmann::json::array({0, 18446744073709551615u})}) {
        j["step_sequence"] = bad;
        EXPECT_TRUE(harness::output::backend_run_from_json(j).step_sequence.empty()) << bad;
    }
}

}  // namespace
