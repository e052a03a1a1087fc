#include "commands.hpp"

#include "backend_selection.hpp"
#include "check/check_record.hpp"
#include "check/loss_agreement.hpp"
#include "data/dump.hpp"
#include "model/hourglass.hpp"
#include "results/csv_reporter.hpp"
#include "results/json_reporter.hpp"
#include "results/json_sidecar_reporter.hpp"
#include "results/output_lock.hpp"
#include "results/table_reporter.hpp"
#include "run/profiling.hpp"
#include "run/provenance.hpp"
#include "run/runner.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

namespace harness {

namespace fs = std::filesystem;

namespace {

std::string default_output(const config::RunConfig& config) {
    std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    return "runs/" + config.name + "-" + stamp + ".csv";
}

std::string sidecar_of(const std::string& csv) {
    fs::path p(csv);
    p.replace_extension(".json");
    return p.string();
}

// A folder that `harness run` will write in, checked before anything runs or is created: an
// existing folder must take a new file (a probe file is made and removed at once: permissions
// alone do not tell, /proc is writable for root), a missing one must be creatable from its nearest
// existing parent. Throws a UsageError naming the option and the path.
void check_folder(const std::string& option, const fs::path& dir) {
    std::error_code ec;
    fs::path existing = dir;
    while (!existing.empty() && !fs::exists(existing, ec)) {
        const fs::path parent = existing.parent_path();
        if (parent == existing) break;
        existing = parent;
    }
    if (existing.empty()) existing = ".";
    if (!fs::is_directory(existing, ec))
        throw UsageError(option + ": cannot create folder " + dir.string() + ": " +
                         existing.string() + " is not a folder");
    std::string probe = (existing / ".harness-probe-XXXXXX").string();
    if (::mkdtemp(probe.data()) == nullptr)
        throw UsageError(option + ": cannot write in " + existing.string() + ": " +
                         std::strerror(errno));
    fs::remove(probe, ec);
}

// The folder of a file that `harness run` will write: `path` must name a file, not a folder.
void check_file(const std::string& option, const std::string& path) {
    std::error_code ec;
    if (fs::path(path).filename().empty() || fs::is_directory(path, ec))
        throw UsageError(option + ": " + path + " is a folder; give a file name, such as " +
                         (fs::path(path) / "results.csv").string());
    const fs::path dir = fs::path(path).parent_path();
    check_folder(option, dir.empty() ? fs::path(".") : dir);
}

// A folder option (--dump, --trace): an existing path must be a folder.
void check_dir(const std::string& option, const std::string& dir) {
    std::error_code ec;
    if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
        throw UsageError(option + ": " + dir + " is a file, not a folder");
    check_folder(option, dir);
}

void create_folder(const std::string& option, const fs::path& dir) {
    if (dir.empty()) return;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir))
        throw UsageError(option + ": cannot create folder " + dir.string() + ": " +
                         (ec ? ec.message() : "a file is in the way"));
}

// Marks each finished row with the verdict of the last `harness check` of this config in the
// backend's math mode, when it was recorded for the build of the plugin and the library versions
// that ran now; a backend that mismatched keeps its timings but is flagged. A verdict recorded for
// another build is `stale`: it says nothing about this one.
std::function<void(results::BackendRun&)> verdict_annotator(const config::RunConfig& config) {
    auto verdicts = check::read_verdicts(check::verdicts_path(config));
    return [verdicts](results::BackendRun& run) {
        if (run.status != results::Status::ok) return;
        auto v = check::find_verdict(verdicts, run.backend, run.math_mode);
        if (!v) return;
        const check::BuildIdentity now =
            check::build_identity(run.plugin, run.plugin_version, run.libraries);
        run.check = check::verdict_for(*v, now);
        if (run.check == "stale") {
            std::fprintf(stderr,
                         "      check stale: %s (%s) was recorded for another build: %s; run "
                         "harness check again\n",
                         v->verdict.c_str(), v->utc_time.c_str(),
                         check::identity_change(run.plugin, v->build, now).c_str());
            return;
        }
        if (v->verdict == "mismatch") {
            run.status = results::Status::mismatch;
            run.message = "failed harness check against " + v->baseline + " (" + v->utc_time + ")";
        }
    };
}

// One line per profiled backend: how much of its step its operations account for.
void print_profiles(const std::vector<results::BackendRun>& runs, const std::string& trace_dir,
                    const std::string& config) {
    for (const auto& r : runs) {
        if (!r.profile) continue;
        const results::Profile& p = *r.profile;
        if (!p.error.empty()) {
            std::fprintf(stderr, "profile of %s: none: %s\n", r.backend.c_str(), p.error.c_str());
            continue;
        }
        std::string line = fmt::format(
            "profile of {}: {} steps of {:.3g} ms; operations {:.3g} ms ({:.1f}%), unaccounted "
            "{:.3g} ms",
            r.backend, p.steps, p.step_ms, p.operations_ms(),
            p.step_ms > 0 ? 100 * p.operations_ms() / p.step_ms : 0.0, p.unaccounted_ms());
        if (!trace_dir.empty()) line += "; trace: " + run::trace_path(trace_dir, config, r.backend);
        std::fprintf(stderr, "%s\n", line.c_str());
    }
}

void dump_inputs(const config::RunConfig& config, const std::string& dir) {
    const model::Graph graph = model::build_hourglass(config.model);
    data::dump(dir, graph, config.seed, data::initial_state(graph, config.seed),
               data::make_batches(graph, config.seed, config.batches, config.input_block),
               config.optimizer);
    std::fprintf(stderr, "wrote the initial tensors and batches to %s (index.json)\n", dir.c_str());
}

}  // namespace

int run_command(const RunArgs& args) {
    run::RunRequest request;
    config::RunConfig config;
    std::string csv_path, json_path;
    std::optional<results::OutputLock> lock;  // held until the last row is written
    try {
        config = config::load_config(args.config);
        request.config_path = args.config;
        request.entries = select_entries(config, args.backends);
        request.overrides = {args.warmup, args.iterations};
        if (args.profile || !args.trace_dir.empty())
            request.profiling = {args.profile_steps, args.trace_dir};
        csv_path = args.output.empty() ? default_output(config) : args.output;
        json_path = sidecar_of(csv_path);
        // Every destination is checked before anything is created, and everything is created
        // before any backend runs: a bad destination costs no run and leaves nothing behind.
        check_file("--output", csv_path);
        check_file("--output's JSON sidecar", json_path);
        if (!args.trace_dir.empty()) check_dir("--trace", args.trace_dir);
        if (!args.dump_dir.empty()) check_dir("--dump", args.dump_dir);
        create_folder("--output", fs::path(csv_path).parent_path());
        lock.emplace(csv_path);
        if (!args.trace_dir.empty()) create_folder("--trace", args.trace_dir);
        request.on_finished = verdict_annotator(config);
        request.on_runs = check::annotate_loss_agreement;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "harness run: %s\n", e.what());
        return kExitUsage;
    }
    try {
        if (!args.dump_dir.empty()) dump_inputs(config, args.dump_dir);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "harness run: --dump: %s\n", e.what());
        return kExitUsage;
    }

    results::Reporters reporters;
    reporters.add(std::make_unique<results::CsvReporter>(csv_path));
    reporters.add(std::make_unique<results::JsonSidecarReporter>(json_path));
    if (args.json)
        reporters.add(std::make_unique<results::JsonReporter>(std::cout));
    else
        reporters.add(std::make_unique<results::TableReporter>(std::cout));

    run::RunOutcome outcome;
    try {
        outcome = run::run_backends(config, request, reporters);
    } catch (const results::OutputError& e) {
        std::fprintf(stderr, "harness run: %s\n", e.what());
        return kExitOutputFailed;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "harness run: %s\n", e.what());
        return kExitBackendFailed;
    }

    print_profiles(outcome.runs, request.profiling.trace_dir, config.name);
    std::fprintf(stderr, "results: %s (raw samples: %s)\n", csv_path.c_str(), json_path.c_str());

    // Backends that trained the same problem from the same weights and data, yet disagree on
    // the loss of their first step, did not compute the same step: no check needed to say so.
    bool disagreed = false;
    for (const auto& r : outcome.runs)
        if (r.loss_agreement == "disagrees") {
            std::fprintf(stderr, "harness run: %s: %s\n", r.backend.c_str(),
                         r.loss_agreement_detail.c_str());
            disagreed = true;
        }

    if (outcome.interrupted) return kExitInterrupted;
    for (const auto& r : outcome.runs)
        if (run::is_failure(r.status)) return kExitBackendFailed;
    if (disagreed) return kExitBackendFailed;
    // Every backend skipped (no plugin built, no device here): nothing was measured, which must
    // not look like a success.
    bool ran = false;
    for (const auto& r : outcome.runs) ran = ran || r.status != results::Status::skipped;
    if (!ran) {
        std::fprintf(stderr,
                     "harness run: no backend ran: each of the %zu selected was skipped (the "
                     "reasons are above)\n",
                     outcome.runs.size());
        return kExitNothingRan;
    }
    return kExitOk;
}

}  // namespace harness
