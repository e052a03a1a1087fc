#include "commands.hpp"

#include "backend_selection.hpp"
#include "check/check_json_reporter.hpp"
#include "check/check_record.hpp"
#include "check/check_runner.hpp"
#include "check/check_table_reporter.hpp"
#include "run/provenance.hpp"

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
                {c.run.backend, c.run.math_mode, c.comparison.pass ? "pass" : "mismatch",
                 request.baseline, now,
                 check::build_identity(c.run.plugin, c.run.plugin_version, c.run.libraries)});
    if (!verdicts.empty()) check::record_verdicts(check::verdicts_path(config), verdicts);
}

}  // namespace

int check_command(const CheckArgs& args) {
    config::RunConfig config;
    check::CheckRequest request;
    try {
        config = config::load_config(args.config);
        request.config_path = args.config;
        request.entries = select_entries(config, args.backends);
        request.baseline = args.baseline;
        request.steps = args.steps;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "harness check: %s\n", e.what());
        return kExitUsage;
    }
    check::CheckOutcome outcome;
    try {
        outcome = check::run_check(config, request);
        record(config, outcome, request);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "harness check: %s\n", e.what());
        return kExitBackendFailed;
    }
    std::unique_ptr<check::CheckReporter> reporter;
    if (args.json)
        reporter = std::make_unique<check::CheckJsonReporter>(std::cout);
    else
        reporter = std::make_unique<check::CheckTableReporter>(std::cout);
    reporter->report(request, outcome);
    if (!outcome.baseline_problem.empty()) return kExitBackendFailed;
    for (const auto& c : outcome.checks)
        if (c.run.status != results::Status::ok && c.run.status != results::Status::skipped)
            return kExitBackendFailed;
    return kExitOk;
}

}  // namespace harness
