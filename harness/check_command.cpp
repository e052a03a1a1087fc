#include "commands.hpp"

#include "backend_selection.hpp"
#include "check/check_json_reporter.hpp"
#include "check/check_record.hpp"
#include "check/check_runner.hpp"
#include "check/check_table_reporter.hpp"
#include "check/layer_check.hpp"
#include "check/suite.hpp"
#include "model/hourglass.hpp"
#include "plugin_host/option_check.hpp"
#include "run/progress.hpp"
#include "run/provenance.hpp"

#include <algorithm>
#include <iostream>
#include <memory>

namespace harness {

namespace {

void record(const config::RunConfig& config, const check::CheckOutcome& outcome,
            const check::CheckRequest& request) {
    std::vector<check::Verdict> verdicts;
    const std::string now = run::utc_now_iso8601();
    for (const auto& c : outcome.checks)
        if (check::compared(c) && c.comparison.problem.empty())
            verdicts.push_back(
                {c.run.backend, c.run.math_word(), c.comparison.pass ? "pass" : "mismatch",
                 request.baseline, now,
                 check::build_identity(c.run.plugin, c.run.plugin_version, c.run.libraries)});
    if (!verdicts.empty()) check::record_verdicts(check::verdicts_path(config), verdicts);
}

// 0 when every backend passed or was skipped; 1 when one mismatched or failed, or the baseline did.
int exit_code_of(const check::CheckOutcome& outcome) {
    if (!outcome.baseline_problem.empty()) return kExitBackendFailed;
    for (const auto& c : outcome.checks)
        if (c.run.status != output::Status::ok && c.run.status != output::Status::skipped)
            return kExitBackendFailed;
    for (const auto& c : outcome.rank_checks)
        if (c.run.status != output::Status::ok && c.run.status != output::Status::skipped)
            return kExitBackendFailed;
    return kExitOk;
}

std::unique_ptr<check::CheckReporter> reporter_for(const CheckArgs& args) {
    if (args.json) return std::make_unique<check::CheckJsonReporter>(std::cout);
    return std::make_unique<check::CheckTableReporter>(std::cout);
}

// `--layers`: each selected configuration checked alone; its verdicts are not the config's, and
// are not recorded.
int check_layers(const config::RunConfig& config, const check::CheckRequest& request,
                 const std::vector<int>& units, const CheckArgs& args) {
    check::LayerCheckOutcome outcome;
    try {
        outcome = check::run_layer_check(config, request, units, *args.layers);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "harness check: %s\n", e.what());
        return kExitBackendFailed;
    }
    reporter_for(args)->report_layers(request, outcome);
    if (outcome.interrupted) return kExitInterrupted;
    int code = kExitOk;
    for (const auto& u : outcome.units) code = std::max(code, exit_code_of(u.outcome));
    return code;
}

}  // namespace

int check_command(const CheckArgs& args) {
    config::RunConfig config;
    check::CheckRequest request;
    run::ProgressLine progress(run::ProgressLine::wanted(args.quiet || args.json));
    std::vector<int> units;
    try {
        if (args.device && !args.plugin)
            throw std::invalid_argument("--device goes with --plugin or --suite");
        config = config::load_config(args.config);
        if (args.plugin)
            config = check::with_backend(config, {*args.plugin, args.device.value_or("cpu")});
        request.config_path = args.config;
        request.entries = select_entries(config, args.backends);
        plugin_host::check_entries_against_plugins(config, request.entries);
        if (args.baseline) request.baseline = *args.baseline;
        request.steps = args.steps;
        request.progress = &progress;
        if (args.layers)
            units = check::select_units(model::layer_units(model::build_hourglass(config.model)),
                                        *args.layers);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "harness check: %s\n", e.what());
        return kExitUsage;
    }
    if (args.layers) return check_layers(config, request, units, args);
    check::CheckOutcome outcome;
    try {
        outcome = check::run_check(config, request);
        if (!args.plugin) record(config, outcome, request);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "harness check: %s\n", e.what());
        return kExitBackendFailed;
    }
    reporter_for(args)->report(request, outcome);
    return exit_code_of(outcome);
}

}  // namespace harness
