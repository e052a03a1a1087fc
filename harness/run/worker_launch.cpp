#include "run/worker_launch.hpp"

#include "model/hourglass.hpp"
#include "results/run_json.hpp"
#include "run/child_process.hpp"
#include "run/library_output.hpp"
#include "run/runner.hpp"

#include <fmt/format.h>
#include <boost/dll/runtime_symbol_info.hpp>
#include <nlohmann/json.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <optional>

namespace harness::run {

double timeout_of(const config::RunConfig& config, const config::BackendEntry& entry) {
    return entry.timeout_s > 0 ? entry.timeout_s : config.timeout_s;
}

namespace {

// The row of a data-parallel run that one of its ranks ended: the first rank's row that failed,
// when rank 0 wrote none or an unfinished one (docs/parallel.md).
std::optional<results::BackendRun> rank_failure(const WorkerJob& job) {
    auto read = [](const std::string& path) -> std::optional<results::BackendRun> {
        std::ifstream in(path);
        if (!in) return std::nullopt;
        try {
            return results::backend_run_from_json(nlohmann::json::parse(in));
        } catch (const std::exception&) {
            return std::nullopt;
        }
    };
    const auto first = read(job.result_path);
    if (first && !is_failure(first->status)) return std::nullopt;
    if (first) return first;
    for (int rank = 1; rank < job.ranks; ++rank)
        if (auto run = read(rank_result_path(job.result_path, rank));
            run && is_failure(run->status)) {
            run->message = fmt::format("rank {} of {}: {}", rank, job.ranks, run->message);
            return run;
        }
    return std::nullopt;
}

results::BackendRun run_worker(const config::RunConfig& config, const WorkerJob& job,
                               double timeout_s) {
    // The row of a worker that wrote none.
    auto unfinished = [&] {
        results::BackendRun run = describe_entry(config, entry_for(config, job), job.overrides,
                                                 model::build_hourglass(config.model));
        if (job.ranks > 0) run.parallel.emplace().ranks = job.ranks;
        return run;
    };
    std::string mpirun;
    if (job.ranks > 1 && (mpirun = find_executable("mpirun")).empty()) {
        results::BackendRun run = unfinished();
        run.status = results::Status::skipped;
        run.message = fmt::format(
            "{} ranks need mpirun, which is not on PATH (scripts/setup.sh installs Open MPI)",
            job.ranks);
        return run;
    }
    ChildProcess child(
        worker_arguments(boost::dll::program_location().string(), job, config, mpirun),
        mpirun.empty() ? SIGKILL : SIGTERM);
    const ExitInfo exit = child.wait(timeout_s);
    if (job.ranks > 1 && !exit.timed_out && !exit.interrupted)
        if (auto run = rank_failure(job)) return *run;

    // A worker that was stopped (interrupted, or past its deadline) still writes what it
    // measured when it can: the steps it completed are kept.
    auto written = [&]() -> std::optional<results::BackendRun> {
        if (exit.exit_code != 0 || exit.signaled) return std::nullopt;
        try {
            std::ifstream in(job.result_path);
            return results::backend_run_from_json(nlohmann::json::parse(in));
        } catch (const std::exception& e) {
            if (exit.interrupted) return std::nullopt;
            results::BackendRun run = unfinished();
            run.status = results::Status::failed;
            run.message = std::string("unreadable worker result: ") + e.what();
            return run;
        }
    };

    if (!exit.timed_out) {
        if (auto run = written()) return *run;
    }
    results::BackendRun run = unfinished();
    if (exit.interrupted) {
        run.status = results::Status::interrupted;
        run.message = "interrupted before the worker wrote its result: no step kept";
    } else if (exit.timed_out) {
        run.status = results::Status::timeout;
        run.message = fmt::format("no result within the {} s limit", timeout_s);
    } else if (exit.signaled) {
        run.status = results::Status::crashed;
        run.message = "worker killed by " + describe_signal(exit.signal);
        if (exit.signal == SIGKILL) run.message += "; possibly the out-of-memory killer";
    } else {
        run.status = results::Status::failed;
        run.message = fmt::format("worker exited with code {} without a result", exit.exit_code);
    }
    return run;
}

}  // namespace

results::BackendRun launch_worker(const config::RunConfig& config, const WorkerJob& job,
                                  double timeout_s) {
    results::BackendRun run = run_worker(config, job, timeout_s);
    const std::string log = log_path_of(job.result_path);
    run.log = read_log(log);
    std::error_code ignored;
    std::filesystem::remove(log, ignored);
    return run;
}

}  // namespace harness::run
