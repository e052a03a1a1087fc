// The check network with its initial weights and batches, read from configs/check.yaml, for the
// tests that hold a backend to what `harness check` holds it to. HB_CHECK_CONFIG names the file
// where the test program runs away from this source tree (scripts/gpu-check.sh).
#pragma once

#include "config/config.hpp"
#include "data/initial_state.hpp"
#include "model/hourglass.hpp"
#include "test_paths.hpp"

#include <cstdlib>
#include <string>
#include <vector>

namespace harness::testing {

inline std::string check_config_path() {
    const char* elsewhere = std::getenv("HB_CHECK_CONFIG");
    return elsewhere ? elsewhere : std::string(HB_SOURCE_DIR) + "/configs/check.yaml";
}

struct CheckProblem {
    config::RunConfig config = config::load_config(check_config_path());
    model::Graph graph = model::build_hourglass(config.model);
    model::AbiGraph abi{graph};
    std::vector<data::HostTensor> state = data::initial_state(graph, config.seed);
    data::Batches batches = data::make_batches(graph, config.seed, config.batches);
};

inline const CheckProblem& check_problem() {
    static const CheckProblem problem;
    return problem;
}

}  // namespace harness::testing
