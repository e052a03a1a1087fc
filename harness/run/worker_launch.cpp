#include "run/worker_launch.hpp"

#include "model/hourglass.hpp"
#include "output/run_json.hpp"
#include "plugin_host/child_process.hpp"
#include "plugin_host/library_output.hpp"
#include "run/event_pipe.hpp"
#include "run/job_file.hpp"
#include "run/progress.hpp"
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
std::optional<output::BackendRun> rank_failure(const WorkerJob& job) {
    auto read = [](const std::string& path) -> std::optional<output::BackendRun> {
        std::ifstream in(path);
        if (!in) return std::nullopt;
        try {
            return output::backend_run_from_json(nlohmann::json::parse(in));
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

plugin_host::ExitInfo run_child(const config::RunConfig& config, const WorkerJob& job,
                                double timeout_s, const std::string& mpirun,
                                ProgressLine* progress) {
    const std::string harness =
        mpirun.empty() ? plugin_host::own_executable() : boost::dll::program_location().string();
    const int death_signal = mpirun.empty() ? SIGKILL : SIGTERM;
    EventPipe events;
    const std::string job_file = job_path_of(job.result_path);
    if (!progress || !progress->enabled() || job.ranks > 1 || !events.open()) {
        write_job_file(job_file, config, job);
        // What mpirun itself says (a rank that cannot start) joins the ranks' log.
        plugin_host::ChildProcess child(
            worker_arguments(harness, job_file, job, config, mpirun), death_signal,
            std::vector<int>(), mpirun.empty() ? "" : plugin_host::log_path_of(job.result_path));
        return child.wait(timeout_s);
    }
    WorkerJob watched = job;
    watched.progress_fd = events.write_fd();
    write_job_file(job_file, config, watched);
    plugin_host::ChildProcess child(worker_arguments(harness, job_file, watched, config, mpirun),
                                    death_signal, std::vector<int>{events.write_fd()});
    events.close_write();
    return child.wait(timeout_s, events.read_fd(), [&] {
        return events.read_events([&](const StepEvent& e) { progress->update(e); });
    });
}

// The row of a worker that wrote none.
output::BackendRun unfinished(const config::RunConfig& config, const WorkerJob& job) {
    output::BackendRun run = describe_entry(config, entry_for(config, job), job.overrides,
                                            model::build_hourglass(config.model));
    if (job.ranks > 0) run.parallel.emplace().ranks = job.ranks;
    return run;
}

// The row of a worker that ended as `exit` says.
output::BackendRun row_after_exit(const config::RunConfig& config, const WorkerJob& job,
                                  const plugin_host::ExitInfo& exit, double timeout_s) {
    if (job.ranks > 1 && !exit.timed_out && !exit.interrupted)
        if (auto run = rank_failure(job)) return *run;

    // A worker that was stopped (interrupted, or past its deadline) still writes what it
    // measured when it can: the steps it completed are kept.
    auto written = [&]() -> std::optional<output::BackendRun> {
        if (exit.exit_code != 0 || exit.signaled) return std::nullopt;
        try {
            std::ifstream in(job.result_path);
            return output::backend_run_from_json(nlohmann::json::parse(in));
        } catch (const std::exception& e) {
            if (exit.interrupted) return std::nullopt;
            output::BackendRun run = unfinished(config, job);
            run.status = output::Status::failed;
            run.message = std::string("unreadable worker result: ") + e.what();
            return run;
        }
    };

    if (!exit.timed_out) {
        if (auto run = written()) return *run;
    }
    output::BackendRun run = unfinished(config, job);
    if (exit.interrupted) {
        run.status = output::Status::interrupted;
        run.message = "interrupted before the worker wrote its result: no step kept";
    } else if (exit.timed_out) {
        run.status = output::Status::timeout;
        run.message = fmt::format("no result within the {} s limit", timeout_s);
    } else {
        if (exit.signaled) {
            run.status = output::Status::crashed;
            run.message = "worker killed by " + plugin_host::describe_signal(exit.signal);
            if (exit.signal == SIGKILL) run.message += "; possibly the out-of-memory killer";
        } else {
            run.status = output::Status::failed;
            run.message =
                fmt::format("worker exited with code {} without a result", exit.exit_code);
        }
        const std::string reason = plugin_host::reason_in_log(
            plugin_host::read_log(plugin_host::log_path_of(job.result_path)));
        if (!reason.empty()) run.message += ": " + reason;
    }
    return run;
}

}  // namespace

output::BackendRun launch_worker(const config::RunConfig& config, const WorkerJob& job,
                                 double timeout_s, ProgressLine* progress) {
    std::string mpirun;
    if (job.ranks > 1 && (mpirun = plugin_host::find_executable("mpirun")).empty()) {
        output::BackendRun run = unfinished(config, job);
        run.status = output::Status::skipped;
        run.message = fmt::format(
            "{} ranks need mpirun, which is not on PATH (scripts/setup.sh installs Open MPI)",
            job.ranks);
        return run;
    }
    return finish_row(config, job, run_child(config, job, timeout_s, mpirun, progress), timeout_s);
}

output::BackendRun finish_row(const config::RunConfig& config, const WorkerJob& job,
                              const plugin_host::ExitInfo& exit, double timeout_s) {
    output::BackendRun run = row_after_exit(config, job, exit, timeout_s);
    const std::string log = plugin_host::log_path_of(job.result_path);
    run.log = plugin_host::read_log(log);
    std::error_code ignored;
    std::filesystem::remove(log, ignored);
    std::filesystem::remove(job_path_of(job.result_path), ignored);
    return run;
}

}  // namespace harness::run
