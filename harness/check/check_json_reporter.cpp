#include "check/check_json_reporter.hpp"

#include "output/run_json.hpp"

#include <nlohmann/json.hpp>

namespace harness::check {

namespace {

nlohmann::json difference_json(const Difference* d) {
    if (!d) return nullptr;
    nlohmann::json j = {{"quantity", d->quantity},        {"max_abs", d->max_abs},
                        {"relative", d->relative},        {"scale", d->scale},
                        {"tolerance", d->tolerance},      {"spread", d->noise},
                        {"resolution", d->resolution},    {"determined", d->determined},
                        {"undetermined", d->undetermined}};
    if (d->member > 0) {
        j["member"] = d->member;
        j["member_relative"] = d->member_relative;
    }
    return j;
}

nlohmann::json to_json(const CheckOutcome& outcome, const CheckRequest& request) {
    nlohmann::json j = {{"config", request.config_path},
                        {"steps", request.steps},
                        {"baseline",
                         {{"name", request.baseline},
                          {"status", output::to_string(outcome.baseline.status)},
                          {"message", outcome.baseline.message},
                          {"losses", outcome.baseline.losses}}},
                        {"baseline_problem", outcome.baseline_problem},
                        {"backends", nlohmann::json::array()}};
    if (!outcome.baseline.log.empty()) j["baseline"]["log"] = outcome.baseline.log;
    for (const auto& c : outcome.checks) {
        nlohmann::json b = {{"backend", c.run.backend},       {"device", c.run.device},
                            {"math_mode", c.run.math_word()}, {"verdict", verdict_of(c)},
                            {"message", c.run.message},       {"losses", c.run.losses}};
        if (!c.run.log.empty()) b["log"] = c.run.log;
        if (compared(c)) {
            const auto& t = c.comparison.tolerance;
            b["tolerance"] = {{"label", t.label},
                              {"loss", t.loss},
                              {"gradient", t.gradient},
                              {"state", t.state},
                              {"reduced_precision", t.reduced_precision}};
            b["problem"] = c.comparison.problem;
            b["not_compared"] = c.comparison.not_compared;
            b["worst_abs"] = difference_json(c.comparison.worst_abs());
            b["worst_relative"] = difference_json(c.comparison.worst_relative());
            b["undetermined_quantities"] = c.comparison.undetermined_quantities();
            b["ensemble_members"] = c.comparison.members;
            b["differences"] = nlohmann::json::array();
            for (const auto& d : c.comparison.differences)
                b["differences"].push_back(difference_json(&d));
        }
        j["backends"].push_back(b);
    }
    if (!outcome.rank_checks.empty()) {
        j["ranks"] = nlohmann::json::array();
        for (const auto& c : outcome.rank_checks)
            j["ranks"].push_back({{"backend", c.backend},
                                  {"ranks", c.ranks},
                                  {"verdict", rank_verdict_of(c)},
                                  {"tensors", c.tensors},
                                  {"detail", c.detail}});
    }
    return j;
}

nlohmann::json to_json(const LayerCheckOutcome& outcome, const CheckRequest& request) {
    nlohmann::json j = {
        {"config", request.config_path},      {"steps", request.steps},
        {"baseline", request.baseline},       {"layers", outcome.layers},
        {"interrupted", outcome.interrupted}, {"configurations", nlohmann::json::array()},
        {"summary", nlohmann::json::array()}};
    for (const auto& u : outcome.units) {
        // The configuration's whole check, as `harness check --json` gives a config's.
        nlohmann::json c = to_json(u.outcome, request);
        c.erase("config");
        c.erase("steps");
        c["name"] = u.unit.name;
        c["kind"] = u.unit.kind;
        c["count"] = u.unit.count();
        c["occurrences"] = u.unit.occurrences;
        j["configurations"].push_back(std::move(c));
    }
    for (const auto& s : summarize_by_kind(outcome))
        j["summary"].push_back(
            {{"kind", s.kind},
             {"backend", s.backend},
             {"configurations", s.configurations},
             {"skipped", s.skipped},
             {"failed", s.failed},
             {"worst_configuration", s.worst_configuration},
             {"worst_relative", difference_json(s.worst.quantity.empty() ? nullptr : &s.worst)}});
    return j;
}

}  // namespace

void CheckJsonReporter::report(const CheckRequest& request, const CheckOutcome& outcome) {
    out_ << output::json_text(to_json(outcome, request), 2) << "\n";
}

void CheckJsonReporter::report_layers(const CheckRequest& request,
                                      const LayerCheckOutcome& outcome) {
    out_ << output::json_text(to_json(outcome, request), 2) << "\n";
}

}  // namespace harness::check
