#include "commands.hpp"

#include "backend_selection.hpp"
#include "check/check_record.hpp"
#include "check/loss_agreement.hpp"
#include "data/dump.hpp"
#include "destinations.hpp"
#include "model/hourglass.hpp"
#include "output/csv_reporter.hpp"
#include "output/json_reporter.hpp"
#include "output/json_sidecar_reporter.hpp"
#include "output/output_lock.hpp"
#include "output/sidecar_path.hpp"
#include "output/table_reporter.hpp"
#include "plugin_host/option_check.hpp"
#include "roofline/run_bound.hpp"
#include "run/profiling.hpp"
#include "run/provenance.hpp"
#include "run/round_order.hpp"
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
#include <stdexcept>

namespace harness {

namespace fs = std::filesystem;

namespace {

// Marks each finished row with the verdict of the last `harness check` of this config in the
// backend's math mode, when it was recorded for the build of the plugin and the library versions
// that ran now; a backend that mismatched keeps its timings but is flagged. A verdict recorded for
// another build is `stale`: it says nothing about this one.
std::function<void(output::BackendRun&)> verdict_annotator(const config::RunConfig& config) {
    auto verdicts = check::read_verdicts(check::verdicts_path(config));
    return [verdicts](output::BackendRun& run) {
        if (run.status != output::Status::ok) return;
        auto v = check::find_verdict(verdicts, run.backend, run.math_word());
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
            run.status = output::Status::mismatch;
            run.message = "failed harness check against " + v->baseline + " (" + v->utc_time + ")";
        }
    };
}

// One line per profiled backend: how much of its step its operations account for.
void print_profiles(const std::vector<output::BackendRun>& runs, const std::string& trace_dir,
                    const std::string& config) {
    for (const auto& r : runs) {
        if (!r.profile) continue;
        const output::Profile& p = *r.profile;
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

// The entry the table compares the others with: --baseline, else the config's run.baseline when
// it runs, else the first CPU entry that runs; "" when there is none. Throws for a --baseline
// that is not among the entries run.
std::string table_baseline(const config::RunConfig& config, const std::vector<int>& entries,
                           const std::optional<std::string>& asked) {
    auto runs = [&](const std::string& name) {
        for (int i : entries)
            if (config.backends.at(static_cast<size_t>(i)).name == name) return true;
        return false;
    };
    if (asked) {
        if (!runs(*asked))
            throw std::runtime_error("--baseline '" + *asked +
                                     "': not one of the backends this run runs");
        return *asked;
    }
    if (!config.baseline.empty() && runs(config.baseline)) return config.baseline;
    for (int i : entries)
        if (config.backends.at(static_cast<size_t>(i)).device == "cpu")
            return config.backends.at(static_cast<size_t>(i)).name;
    return "";
}

std::vector<std::string> entry_names(const config::RunConfig& config,
                                     const std::vector<int>& entries) {
    std::vector<std::string> names;
    for (int i : entries) names.push_back(config.backends.at(static_cast<size_t>(i)).name);
    return names;
}

// The config's run section, with what the command line sets instead. --rounds alone fixes the
// rounds; the most is never below the least.
output::RoundPlan round_plan(const config::RunConfig& config, const RunArgs& args,
                             const std::string& baseline) {
    output::RoundPlan plan;
    plan.min_rounds = args.rounds > 0 ? args.rounds : config.rounds;
    plan.max_rounds = args.max_rounds > 0                         ? args.max_rounds
                      : args.rounds > 0 || config.max_rounds == 0 ? plan.min_rounds
                                                                  : config.max_rounds;
    if (plan.max_rounds < plan.min_rounds)
        throw std::runtime_error(fmt::format("--max-rounds {} is below the rounds to run ({})",
                                             plan.max_rounds, plan.min_rounds));
    plan.target = args.target.value_or(config.target);
    plan.budget_s = args.budget_s.value_or(config.budget_s);
    plan.baseline = baseline;
    plan.paired_steps = args.interleave ? *args.interleave == "steps" : config.paired_steps;
    return plan;
}

}  // namespace

int run_command(const RunArgs& args) {
    run::RunRequest request;
    config::RunConfig config;
    std::string csv_path, json_path;
    std::optional<output::OutputLock> lock;  // held until the last row is written
    std::string baseline;
    try {
        config = config::load_config(args.config);
        request.config_path = args.config;
        request.entries = select_entries(config, args.backends);
        plugin_host::check_entries_against_plugins(config, request.entries);
        request.overrides = {args.warmup, args.iterations};
        baseline = table_baseline(config, request.entries, args.baseline);
        request.rounds = round_plan(config, args, baseline);
        request.order_seed = args.order_seed.value_or(config.order_seed.value_or(
            request.rounds.max_rounds > 1 ? run::fresh_order_seed() : 0));
        request.quiet = args.quiet || args.json;
        if (args.profile || !args.trace_dir.empty())
            request.profiling = {args.profile_steps, args.trace_dir};
        csv_path = args.output.empty() ? default_output(config) : args.output;
        json_path = output::sidecar_path(csv_path);
        // Every destination is checked before anything is created, and everything is created
        // before any backend runs: a bad destination costs no run and leaves nothing behind.
        std::vector<NamedFile> destinations = {{"--output", csv_path},
                                               {"--output's JSON sidecar", json_path}};
        if (!args.dump_dir.empty()) destinations.push_back({"--dump", args.dump_dir});
        if (!args.trace_dir.empty()) destinations.push_back({"--trace", args.trace_dir});
        check_distinct(destinations, {{"the config", args.config}});
        check_file("--output", csv_path);
        check_file("--output's JSON sidecar", json_path);
        if (!args.trace_dir.empty()) check_dir("--trace", args.trace_dir);
        if (!args.dump_dir.empty()) check_dir("--dump", args.dump_dir);
        create_folder("--output", fs::path(csv_path).parent_path());
        lock.emplace(csv_path);
        if (!args.trace_dir.empty()) create_folder("--trace", args.trace_dir);
        request.on_finished = verdict_annotator(config);
        request.on_runs = check::annotate_loss_agreement;
        request.on_end = [&config](output::Provenance& p, std::vector<output::BackendRun>& runs) {
            roofline::bound_runs(model::build_hourglass(config.model), config.optimizer, p, runs);
            for (output::KindCost& k : p.step_cost)
                k.operation_kinds = run::operation_kinds_of(k.kind);
            for (const output::Ceilings& c : p.ceilings)
                std::fprintf(stderr,
                             "ceilings on %d thread%s: %.1f GFLOP/s (float32 FMA), %.1f GB/s "
                             "(triad); each row's step against the roofline bound they give "
                             "(docs/roofline.md)\n",
                             c.threads, c.threads == 1 ? "" : "s", c.flops.best / 1e9,
                             c.bytes.best / 1e9);
        };
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

    output::Reporters reporters;
    reporters.add(std::make_unique<output::CsvReporter>(csv_path));
    reporters.add(std::make_unique<output::JsonSidecarReporter>(json_path));
    if (args.json)
        reporters.add(std::make_unique<output::JsonReporter>(std::cout));
    else
        reporters.add(std::make_unique<output::TableReporter>(
            std::cout, entry_names(config, request.entries)));

    run::RunOutcome outcome;
    try {
        outcome = run::run_backends(config, request, reporters);
    } catch (const output::OutputError& e) {
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

    if (disagreed && !outcome.interrupted) return kExitBackendFailed;
    return run::exit_code_of(outcome, "harness run");
}

}  // namespace harness
