// A capability means what it says: an entry that needs one its plugin does not announce is refused
// at its place before anything runs (placement: host without HB_CAP_HOST_PLACEMENT).
#include "harness_process.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace {

using harness::testing::fake_plugins_env;
using harness::testing::run_harness;
using harness::testing::TempDir;

TEST(Capabilities, HostPlacementWithoutTheCapabilityIsRefusedAtItsPlace) {
    TempDir dir;
    const std::string model =
        "model: {stacks: 1, features: 8, depth: 1, joints: 2, input_size: 16, batch: 2}\n";
    const std::string own = dir / "own.yaml", inherited = dir / "inherited.yaml";
    std::ofstream(own) << model
                       << "backends:\n  - {name: a, plugin: reference, placement: host}\n"
                          "  - {name: b, plugin: fake_good, placement: host}\n";
    std::ofstream(inherited) << model << "data: {placement: host}\n"
                             << "backends:\n  - {plugin: fake_good}\n";
    const std::string why =
        "the fake_good plugin cannot take each step's batch from host memory (it does not "
        "announce HB_CAP_HOST_PLACEMENT): give placement: device";
    const std::string output = " --output " + (dir / "o.csv");
    for (const auto& [config, place] :
         {std::pair{own, ":4:45: key 'backends[1].placement': "},
          std::pair{inherited, ":2:19: key 'data.placement': "}})
        for (const std::string& command :
             {"run " + config + output, "check " + config, "layers " + config + output}) {
            const auto r = run_harness(command, fake_plugins_env() + ":" + HB_PLUGIN_DIR);
            EXPECT_EQ(r.exit_code, 2) << command << ": " << r.output;
            EXPECT_NE(r.output.find(config + place + why), std::string::npos)
                << command << ": " << r.output;
            EXPECT_FALSE(std::filesystem::exists(dir / "o.csv")) << command;
        }
}

}  // namespace
