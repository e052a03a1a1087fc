#include "run/runner.hpp"

#include "results/csv_writer.hpp"
#include "results/json_writer.hpp"
#include "run/child_process.hpp"
#include "run/provenance.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <boost/dll/runtime_symbol_info.hpp>
#include <nlohmann/json.hpp>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace harness::run {

namespace fs = std::filesystem;

namespace {

// A private folder for the workers' result files, removed with everything in it.
class ScratchDir {
public:
    ScratchDir() {
        std::string pattern = (fs::temp_directory_path() / "harness-XXXXXX").string();
        if (!mkdtemp(pattern.data())) throw std::runtime_error("cannot create a temporary folder");
        path_ = pattern;
    }
    ~ScratchDir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    const fs::path& path() const { return path_; }

private:
    fs::path path_;
};

double timeout_of(const config::RunConfig& config, const config::BackendEntry& entry) {
    return entry.timeout_s > 0 ? entry.timeout_s : config.timeout_s;
}

results::BackendRun read_worker_result(const fs::path& file) {
    std::ifstream in(file);
    return results::backend_run_from_json(nlohmann::json::parse(in));
}

results::BackendRun run_one(const config::RunConfig& config, const RunRequest& request, int index,
                            const fs::path& scratch) {
    const auto& entry = config.backends.at(static_cast<size_t>(index));
    const fs::path result_file = scratch / fmt::format("worker-{}.json", index);
    std::vector<std::string> argv = {boost::dll::program_location().string(),
                                     "__worker",
                                     request.config_path,
                                     std::to_string(index),
                                     result_file.string(),
                                     "--warmup",
                                     std::to_string(request.overrides.warmup),
                                     "--iterations",
                                     std::to_string(request.overrides.iterations)};
    const double timeout_s = timeout_of(config, entry);
    ChildProcess child(argv);
    const ExitInfo exit = child.wait(timeout_s);

    if (exit.exit_code == 0 && !exit.signaled && !exit.timed_out && !exit.interrupted) {
        try {
            return read_worker_result(result_file);
        } catch (const std::exception& e) {
            results::BackendRun run = describe_entry(config, index, request.overrides);
            run.status = results::Status::failed;
            run.message = std::string("unreadable worker result: ") + e.what();
            return run;
        }
    }
    results::BackendRun run = describe_entry(config, index, request.overrides);
    if (exit.interrupted) {
        run.status = results::Status::failed;
        run.message = "interrupted";
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

void write_results(const RunRequest& request, const RunOutcome& outcome) {
    if (!request.csv_path.empty())
        results::write_csv(request.csv_path, outcome.provenance, outcome.runs);
    if (!request.json_path.empty())
        results::write_json(request.json_path, outcome.provenance, outcome.runs);
}

}  // namespace

bool is_failure(results::Status status) {
    switch (status) {
        case results::Status::ok:
        case results::Status::skipped:
            return false;
        default:
            return true;
    }
}

RunOutcome run_backends(const config::RunConfig& config, const RunRequest& request) {
    install_interrupt_handler();
    RunOutcome outcome;
    outcome.provenance = collect_provenance(config);
    ScratchDir scratch;
    const size_t count = request.entries.size();
    for (size_t i = 0; i < count; ++i) {
        const auto& entry = config.backends.at(static_cast<size_t>(request.entries[i]));
        if (request.announce)
            std::fprintf(stderr, "[%zu/%zu] %s (%s on %s)\n", i + 1, count, entry.name.c_str(),
                         entry.plugin.c_str(), entry.device.c_str());
        results::BackendRun run = run_one(config, request, request.entries[i], scratch.path());
        if (request.announce)
            std::fprintf(stderr, "      %s%s%s\n", results::to_string(run.status),
                         run.message.empty() ? "" : ": ", run.message.c_str());
        outcome.runs.push_back(std::move(run));
        write_results(request, outcome);
        if (interrupted()) {
            outcome.interrupted = true;
            break;
        }
    }
    return outcome;
}

}  // namespace harness::run
