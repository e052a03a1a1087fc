// The plugin boundary from the host side: loading failures named for what they are, calls that
// fail, the listing of broken libraries; the GPU driver's version in the provenance.
#include "harness_process.hpp"
#include "output/csv_reader.hpp"
#include "plugin_host/plugin_library.hpp"
#include "plugin_host/plugin_listing.hpp"
#include "run/provenance.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>

namespace {

using harness::plugin_host::PluginCallError;
using harness::plugin_host::PluginLibrary;
using harness::plugin_host::PluginLoadError;
using harness::testing::fake_plugins_env;
using harness::testing::run_harness;
using harness::testing::TempDir;

std::string fake(const std::string& name) {
    return std::string(HB_FAKE_PLUGIN_DIR) + "/hb_fake_" + name + ".so";
}

std::string load_error(const std::string& name) {
    try {
        PluginLibrary::load(fake(name));
    } catch (const PluginLoadError& e) {
        return e.what();
    }
    return "";
}

TEST(Provenance, ReadsTheDriverVersionOfEitherKernelModule) {
    using harness::run::nvidia_driver_version;
    EXPECT_EQ(
        nvidia_driver_version("NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release "
                              "Build  (dvs-builder@U22)  Wed Oct  1 2025"),
        "580.159.04");
    EXPECT_EQ(nvidia_driver_version("NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19"),
              "535.104.05");
    EXPECT_EQ(nvidia_driver_version("no version here"), "");
}

TEST(PluginLibrary, LoadsAGoodPluginAndReadsItsDescription) {
    PluginLibrary library = PluginLibrary::load(fake("good"));
    EXPECT_STREQ(library.info().name, "fake");
    EXPECT_STREQ(library.info().version, "0.0.1");
    ASSERT_EQ(library.info().num_devices, 1);
    EXPECT_STREQ(library.info().devices[0].name, "cpu");
    EXPECT_EQ(HB_API_MAJOR(library.api().api_version), HB_API_VERSION_MAJOR);
}

// This SDK's ABI version, "major.minor".
std::string abi() {
    return std::to_string(HB_API_VERSION_MAJOR) + "." + std::to_string(HB_API_VERSION_MINOR);
}

std::string harness_abi() {
    return "harness ABI " + abi();
}

TEST(PluginLibrary, RejectsAnotherMajorAbiVersionNamingBoth) {
    std::string error = load_error("wrong_abi");
    EXPECT_NE(error.find("plugin ABI version 99.3"), std::string::npos) << error;
    EXPECT_NE(error.find(harness_abi()), std::string::npos) << error;
}

// A plugin built against the previous major version's header (tests/abi/1.0).
TEST(PluginLibrary, RejectsAPluginOfAbi1NamingBothVersions) {
    std::string error = load_error("abi_1_0");
    EXPECT_NE(error.find("plugin ABI version 1.0"), std::string::npos) << error;
    EXPECT_NE(error.find(harness_abi()), std::string::npos) << error;
}

// A plugin built against an older minor version's SDK (tests/abi/2.3): its shorter
// description loads, what it has works, and what it lacks (declared options, ABI 2.4) is absent,
// not read past the description's end; its options are left to its session.
TEST(PluginLibrary, LoadsAndRunsAPluginOfAnOlderMinorVersion) {
    PluginLibrary library = PluginLibrary::load(fake("abi_2_3"));
    EXPECT_EQ(library.api().api_version, (2u << 16) | 3u);
    EXPECT_LT(library.info().struct_size, sizeof(hb_plugin_info));
    EXPECT_TRUE(library.can_profile());
    EXPECT_FALSE(library.declared_options());

    TempDir dir;
    std::ofstream(dir / "abi23.yaml")
        << "model: {stacks: 1, features: 16, depth: 1, joints: 2, input_size: 32, batch: 1}\n"
           "run: {warmup: 1, iterations: 2}\n"
           "backends: [{plugin: fake_abi_2_3}]\n";
    auto r = run_harness("run " + (dir / "abi23.yaml") + " --output " + (dir / "abi23.csv"),
                         fake_plugins_env());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto rows = harness::output::read_csv(dir / "abi23.csv");
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0]["status"], "ok") << rows[0]["message"];

    auto listed = run_harness("list", fake_plugins_env());
    EXPECT_NE(listed.output.find("(ABI 2.3)"), std::string::npos) << listed.output;
}

// A plugin built against ABI 2.4 declares its options in 2.4's shorter hb_option_spec, without
// defaults: the harness reads each at the plugin's stride, lists them without a default, and checks
// a config against them.
// Options declared before ABI 2.6 said what they change are read as changing the step: the suite
// checks each of their values.
TEST(PluginLibrary, ReadsTheOptionsOfAnAbi25PluginAsChangingTheStep) {
    PluginLibrary library = PluginLibrary::load(fake("abi_2_5"));
    EXPECT_EQ(library.api().api_version, (2u << 16) | 5u);
    EXPECT_LT(library.info().option_size, sizeof(hb_option_spec));
    const auto specs = library.declared_options();
    ASSERT_TRUE(specs);
    ASSERT_EQ(specs->size(), 3u);
    for (const auto& s : *specs) {
        EXPECT_EQ(s.effect, HB_OPTION_CHANGES_STEP) << s.key;
        EXPECT_EQ(s.checked_on, "") << s.key;
    }
    // Today's SDK declares `threads` as changing the timing alone.
    const auto reference =
        PluginLibrary::load(std::string(HB_PLUGIN_DIR) + "/hb_reference.so").declared_options();
    ASSERT_TRUE(reference);
    for (const auto& s : *reference)
        EXPECT_EQ(s.effect, s.key == "threads" ? HB_OPTION_CHANGES_TIMING : HB_OPTION_CHANGES_STEP)
            << s.key;
}

TEST(PluginLibrary, ReadsTheOptionsOfAnAbi24PluginWithoutDefaults) {
    PluginLibrary library = PluginLibrary::load(fake("abi_2_4"));
    EXPECT_EQ(library.api().api_version, (2u << 16) | 4u);
    EXPECT_LT(library.info().option_size, sizeof(hb_option_spec));
    const auto specs = library.declared_options();
    ASSERT_TRUE(specs);
    ASSERT_EQ(specs->size(), 3u);
    EXPECT_EQ((*specs)[2].key, "layout");
    EXPECT_EQ((*specs)[2].choices, (std::vector<std::string>{"nhwc", "nchw"}));
    for (const auto& s : *specs) EXPECT_EQ(s.default_value, "") << s.key;

    auto listed = run_harness("list", fake_plugins_env());
    EXPECT_NE(
        listed.output.find("options: threads (1..64), fused (true|false), layout (nhwc|nchw)\n"),
        std::string::npos)
        << listed.output;

    TempDir dir;
    std::ofstream(dir / "abi24.yaml")
        << "model: {stacks: 1, features: 16, depth: 1, joints: 2, input_size: 32, batch: 1}\n"
           "backends:\n  - plugin: fake_abi_2_4\n    options: {layout: nchwc}\n";
    auto r = run_harness("run " + (dir / "abi24.yaml") + " --output " + (dir / "abi24.csv"),
                         fake_plugins_env());
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("expected one of nhwc, nchw, got 'nchwc'"), std::string::npos)
        << r.output;
    EXPECT_FALSE(std::filesystem::exists(dir / "abi24.csv"));
}

TEST(PluginLibrary, RejectsALibraryWithoutTheEntrySymbol) {
    std::string error = load_error("no_entry");
    EXPECT_NE(error.find("no 'hb_plugin_entry' symbol"), std::string::npos) << error;
}

// The message names the file and what is wrong with it, in the harness's words: no loader library's
// internals, no unrelated errno text after it.
TEST(PluginLibrary, ReportsAFileThatIsNotALibrary) {
    std::string error = load_error("garbage");
    EXPECT_EQ(error, fake("garbage") + ": cannot load: not a shared library (not an ELF file)");
}

TEST(PluginLibrary, ReportsAMissingFile) {
    std::string error = load_error("does_not_exist");
    EXPECT_EQ(error, fake("does_not_exist") + ": cannot load: no such file");
}

// A copy of a plugin cut short (an interrupted copy or build).
std::string truncated_copy(const TempDir& dir, const std::string& name, uint64_t size) {
    const std::string file = dir / ("hb_fake_" + name + ".so");
    std::filesystem::copy_file(fake("good"), file);
    std::filesystem::resize_file(file, size);
    return file;
}

// The dynamic loader maps such a file past its end and dies of SIGBUS ("Bus error") instead of
// failing; the harness looks at the file first.
TEST(PluginLibrary, ReportsATruncatedFileInsteadOfCrashing) {
    TempDir dir;
    const uint64_t size = std::filesystem::file_size(fake("good"));
    for (uint64_t cut : {size / 2, size - 1, uint64_t(100), uint64_t(10)}) {
        const std::string file = truncated_copy(dir, "cut" + std::to_string(cut), cut);
        try {
            PluginLibrary::load(file);
            ADD_FAILURE() << "loaded a file cut to " << cut << " bytes";
        } catch (const PluginLoadError& e) {
            const std::string error = e.what();
            EXPECT_EQ(error.rfind(file + ": cannot load: truncated: the file has " +
                                      std::to_string(cut) + " bytes",
                                  0),
                      0u)
                << error;
            EXPECT_NE(error.find("not a valid shared library"), std::string::npos) << error;
        }
    }
}

// From the outside: `harness list` and `harness run` name the file and say it is truncated.
TEST(HarnessRun, ATruncatedPluginIsReportedByNameAndTheRunGoesOn) {
    TempDir plugins, out;
    const std::string file =
        truncated_copy(plugins, "truncated", std::filesystem::file_size(fake("good")) / 2);
    const std::string env =
        "HARNESS_PLUGIN_PATH=" + plugins.path().string() + ":" + std::string(HB_FAKE_PLUGIN_DIR);
    auto list = run_harness("list", env);
    EXPECT_EQ(list.exit_code, 0) << list.output;
    EXPECT_NE(list.output.find(file), std::string::npos) << list.output;
    EXPECT_NE(list.output.find("truncated"), std::string::npos) << list.output;
    EXPECT_EQ(list.output.find("Bus error"), std::string::npos) << list.output;

    const std::string yaml = out / "truncated.yaml";
    std::ofstream(yaml) << "model: {stacks: 1, features: 8, depth: 1, joints: 2, input_size: 16, "
                           "batch: 2}\nrun: {warmup: 0, iterations: 1}\nbackends:\n"
                           "  - {name: truncated, plugin: fake_truncated}\n"
                           "  - {name: good, plugin: fake_good}\n";
    auto run = run_harness("run " + yaml + " --output " + (out / "t.csv"), env);
    EXPECT_EQ(run.exit_code, 1) << run.output;
    auto rows = harness::output::read_csv(out / "t.csv");
    ASSERT_EQ(rows.size(), 2u) << run.output;
    EXPECT_EQ(rows[0]["status"], "failed");
    EXPECT_NE(rows[0]["message"].find(file + ": cannot load: truncated"), std::string::npos)
        << rows[0]["message"];
    EXPECT_EQ(rows[1]["status"], "ok");
}

TEST(PluginSession, AnExceptionInTheStepBecomesAStatusWithItsMessage) {
    PluginLibrary library = PluginLibrary::load(fake("throws"));
    const hb_graph graph = hb_empty_graph();
    hb_optimizer optimizer{};
    optimizer.variant = HB_RMSPROP_TORCH;
    hb_session_desc desc{};
    desc.struct_size = sizeof(desc);
    desc.graph = &graph;
    desc.optimizer = &optimizer;
    desc.device = "cpu";
    harness::plugin_host::PluginSession session(library, desc);
    // The session's graph is empty: its state is empty, one batch of nothing.
    const float* none[1] = {nullptr};
    const float value = 0;
    const float* batch[1] = {&value};
    session.load_state(none);
    session.set_batches(1, batch, batch);
    try {
        session.step(0);
        FAIL() << "step should have thrown";
    } catch (const PluginCallError& e) {
        EXPECT_EQ(e.status(), HB_ERROR);
        EXPECT_NE(std::string(e.what()).find("deliberate failure in step"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("fake: step"), std::string::npos);
    }
}

TEST(PluginListing, DescribesBrokenLibrariesInsteadOfFailing) {
    auto broken = harness::plugin_host::describe_plugin_file(fake("wrong_abi"));
    EXPECT_FALSE(broken["loaded"].get<bool>());
    EXPECT_NE(broken["error"].get<std::string>().find("99.3"), std::string::npos);
    auto good = harness::plugin_host::describe_plugin_file(fake("good"));
    EXPECT_TRUE(good["loaded"].get<bool>());
    EXPECT_EQ(good["abi_version"].get<std::string>(), abi());
}

TEST(HarnessList, ListsEveryPluginWithTheReasonForThoseThatFail) {
    auto r = run_harness("list", fake_plugins_env());
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("fake 0.0.1 (ABI " + abi() + ")"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("deliberately unavailable"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("crashed while loading"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("no 'hb_plugin_entry' symbol"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("99.3"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("hb_fake_garbage.so"), std::string::npos) << r.output;
}

TEST(HarnessList, JsonOutputIsParseable) {
    auto r = run_harness("list --json", fake_plugins_env(), harness::testing::Stderr::discarded);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto j = nlohmann::json::parse(r.output);
    EXPECT_GE(j["plugins"].size(), 10u);
}

}  // namespace
