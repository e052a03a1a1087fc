#include "check/rank_check.hpp"

#include "check/check_runner.hpp"

#include "data/dump.hpp"
#include "model/hourglass.hpp"
#include "plugin_host/child_process.hpp"
#include "plugin_host/scratch_dir.hpp"
#include "run/worker_launch.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace harness::check {

namespace fs = std::filesystem;

namespace {

// Distance in float32 ulps; differing signs or a NaN count as far apart.
int64_t ulps_between(float a, float b) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : INT64_MAX;
    int32_t x = 0, y = 0;
    std::memcpy(&x, &a, sizeof x);
    std::memcpy(&y, &b, sizeof y);
    if ((x < 0) != (y < 0)) return a == b ? 0 : INT64_MAX;
    return std::llabs(static_cast<int64_t>(x) - static_cast<int64_t>(y));
}

bool is_power_of_two(int n) {
    return n > 0 && (n & (n - 1)) == 0;
}

// Entry `entry` captured at `ranks` ranks, every rank on the same batch.
output::BackendRun capture(const config::RunConfig& config, int steps, int entry, int ranks,
                           const fs::path& dir) {
    run::WorkerJob job;
    job.backend = entry;
    job.ranks = ranks;
    job.same_batch = true;
    return run_capture(config, job, steps, dir);
}

}  // namespace

std::string capture_difference(const std::string& expected_dir, const std::string& actual_dir,
                               const std::vector<std::string>& names, int ulps, int& tensors) {
    for (const std::string& name : names) {
        std::vector<int64_t> shape;
        const auto expected =
            data::read_npy((fs::path(expected_dir) / (name + ".npy")).string(), &shape);
        const auto actual =
            data::read_npy((fs::path(actual_dir) / (name + ".npy")).string(), &shape);
        ++tensors;
        if (expected.size() != actual.size())
            return fmt::format("{} has {} elements, not {}", name, actual.size(), expected.size());
        for (size_t i = 0; i < expected.size(); ++i)
            if (ulps_between(expected[i], actual[i]) > ulps)
                return fmt::format("{} element {}: {:.9g}, not {:.9g}", name, i, actual[i],
                                   expected[i]);
    }
    return "";
}

std::vector<RankCheck> run_rank_check(const config::RunConfig& config,
                                      const std::vector<int>& entries, int steps) {
    const model::Graph graph = model::build_hourglass(config.model);
    std::vector<std::string> all, trainable;
    for (const auto& t : graph.tensors) {
        all.push_back(t.name);
        if (t.trainable()) trainable.push_back(t.name);
    }
    const plugin_host::ScratchDir scratch("harness-rank-check");
    std::vector<RankCheck> outcome;
    for (int index : entries) {
        const std::string name = config.backends[static_cast<size_t>(index)].name;
        const fs::path plain_dir = scratch.path() / fmt::format("plain-{}", index);
        std::fprintf(stderr, "%s, one process: %d steps\n", name.c_str(), steps);
        const output::BackendRun plain = capture(config, steps, index, 0, plain_dir);
        for (int ranks : config.parallel.ranks) {
            if (plugin_host::interrupted()) return outcome;
            RankCheck& check = outcome.emplace_back();
            check.backend = name;
            check.ranks = ranks;
            std::fprintf(stderr, "%s, %d rank%s, the same batch on each: %d steps\n", name.c_str(),
                         ranks, ranks > 1 ? "s" : "", steps);
            const fs::path dir = scratch.path() / fmt::format("ranks-{}-{}", index, ranks);
            check.run = capture(config, steps, index, ranks, dir);
            if (plain.status != output::Status::ok) {
                check.run.status = plain.status == output::Status::skipped ? output::Status::skipped
                                                                           : output::Status::failed;
                check.detail = fmt::format("its one-process step {}: {}",
                                           output::to_string(plain.status), plain.message);
                continue;
            }
            if (check.run.status != output::Status::ok) {
                check.detail = check.run.message;
                continue;
            }
            const int ulps = is_power_of_two(ranks) ? 0 : 2;
            std::string difference;
            for (int rank = 0; rank < ranks && difference.empty(); ++rank) {
                const fs::path rank_dir = rank == 0 ? dir : dir / fmt::format("rank-{}", rank);
                for (int k = 1; k <= steps && difference.empty(); ++k) {
                    const std::string folder =
                        k == 1 ? "gradient" : "gradient-" + std::to_string(k);
                    difference = capture_difference((plain_dir / folder).string(),
                                                    (rank_dir / folder).string(), trainable, ulps,
                                                    check.tensors);
                    if (!difference.empty())
                        difference =
                            fmt::format("rank {}, step {} gradient {}", rank, k, difference);
                }
                if (difference.empty()) {
                    difference =
                        capture_difference((plain_dir / "state").string(),
                                           (rank_dir / "state").string(), all, ulps, check.tensors);
                    if (!difference.empty())
                        difference = fmt::format("rank {}, state after {} steps: {}", rank, steps,
                                                 difference);
                }
            }
            check.pass = difference.empty();
            if (!check.pass) check.run.status = output::Status::mismatch;
            check.detail = check.pass ? fmt::format(
                                            "{} tensors over {} rank{} equal to the one-process "
                                            "step's{}",
                                            check.tensors, ranks, ranks > 1 ? "s" : "",
                                            ulps == 0 ? ", bit for bit" : " within 2 ulps")
                                      : difference;
        }
    }
    return outcome;
}

}  // namespace harness::check
