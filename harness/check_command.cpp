#include "commands.hpp"

#include "backend_selection.hpp"
#include "check/check_record.hpp"
#include "check/check_runner.hpp"
#include "run/provenance.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>

namespace harness {

namespace {

std::string verdict_of(const check::BackendCheck& c) {
    switch (c.run.status) {
        case results::Status::ok:
            return "PASS";
        case results::Status::mismatch:
            return "MISMATCH";
        case results::Status::skipped:
            return "SKIPPED";
        default:
            return "FAILED";
    }
}

bool compared(const check::BackendCheck& c) {
    return c.run.status == results::Status::ok || c.run.status == results::Status::mismatch;
}

nlohmann::json difference_json(const check::Difference* d) {
    if (!d) return nullptr;
    return {{"quantity", d->quantity},        {"max_abs", d->max_abs},
            {"relative", d->relative},        {"scale", d->scale},
            {"tolerance", d->tolerance},      {"rounding_noise", d->noise},
            {"undetermined", d->undetermined}};
}

nlohmann::json to_json(const check::CheckOutcome& outcome, const check::CheckRequest& request) {
    nlohmann::json j = {{"config", request.config_path},
                        {"steps", request.steps},
                        {"baseline",
                         {{"name", request.baseline},
                          {"status", results::to_string(outcome.baseline.status)},
                          {"message", outcome.baseline.message},
                          {"losses", outcome.baseline.losses}}},
                        {"baseline_problem", outcome.baseline_problem},
                        {"backends", nlohmann::json::array()}};
    for (const auto& c : outcome.checks) {
        nlohmann::json b = {{"backend", c.run.backend},     {"device", c.run.device},
                            {"math_mode", c.run.math_mode}, {"verdict", verdict_of(c)},
                            {"message", c.run.message},     {"losses", c.run.losses}};
        if (compared(c)) {
            const auto& t = c.comparison.tolerance;
            b["tolerance"] = {{"label", t.label},
                              {"loss", t.loss},
                              {"gradient", t.gradient},
                              {"state", t.state},
                              {"reduced_precision", t.reduced_precision}};
            b["problem"] = c.comparison.problem;
            b["worst_abs"] = difference_json(c.comparison.worst_abs());
            b["worst_relative"] = difference_json(c.comparison.worst_relative());
            b["differences"] = nlohmann::json::array();
            for (const auto& d : c.comparison.differences)
                b["differences"].push_back(difference_json(&d));
        }
        j["backends"].push_back(b);
    }
    return j;
}

void print(const check::CheckOutcome& outcome, const check::CheckRequest& request) {
    std::cout << fmt::format("check {}: baseline {}, {} steps\n", request.config_path,
                             request.baseline, request.steps);
    if (!outcome.baseline_problem.empty()) {
        std::cout << "baseline failed: " << outcome.baseline_problem << "\n";
        return;
    }
    std::cout << fmt::format("{:<16} {:<7} {:<5} {:<9} {:>10}  {:<44} {:>10}  {}\n", "backend",
                             "device", "math", "verdict", "worst rel", "where", "worst abs",
                             "tolerance");
    for (const auto& c : outcome.checks) {
        if (!compared(c)) {
            std::cout << fmt::format("{:<16} {:<7} {:<5} {:<9} {}\n", c.run.backend, c.run.device,
                                     c.run.math_mode, verdict_of(c), c.run.message);
            continue;
        }
        const auto& cmp = c.comparison;
        if (!cmp.problem.empty()) {
            std::cout << fmt::format("{:<16} {:<7} {:<5} {:<9} {}\n", c.run.backend, c.run.device,
                                     c.run.math_mode, verdict_of(c), cmp.problem);
            continue;
        }
        const check::Difference* rel = cmp.worst_relative();
        const check::Difference* abs = cmp.worst_abs();
        std::cout << fmt::format("{:<16} {:<7} {:<5} {:<9} {:>10.3g}  {:<44} {:>10.3g}  {}\n",
                                 c.run.backend, c.run.device, c.run.math_mode, verdict_of(c),
                                 rel ? rel->relative : 0.0, rel ? rel->quantity : "",
                                 abs ? abs->max_abs : 0.0, cmp.tolerance.label);
        if (!cmp.pass)
            for (const auto& d : cmp.differences)
                if (!d.within())
                    std::cout << fmt::format(
                        "    {:<52} relative {:.3g} > {:.3g} (max abs {:.3g})\n", d.quantity,
                        d.relative, d.tolerance, d.max_abs);
    }
}

void record(const config::RunConfig& config, const check::CheckOutcome& outcome,
            const check::CheckRequest& request) {
    std::vector<check::Verdict> verdicts;
    const std::string now = run::utc_now_iso8601();
    for (const auto& c : outcome.checks)
        if (compared(c) && c.comparison.problem.empty())
            verdicts.push_back({c.run.backend, c.run.math_mode,
                                c.comparison.pass ? "pass" : "mismatch", request.baseline, now});
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
    if (args.json)
        std::cout << to_json(outcome, request).dump(2) << "\n";
    else
        print(outcome, request);
    if (!outcome.baseline_problem.empty()) return kExitBackendFailed;
    for (const auto& c : outcome.checks)
        if (c.run.status != results::Status::ok && c.run.status != results::Status::skipped)
            return kExitBackendFailed;
    return kExitOk;
}

}  // namespace harness
