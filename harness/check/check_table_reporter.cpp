#include "check/check_table_reporter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace harness::check {

namespace {

// Under a comparison that failed: every quantity outside its tolerance.
void write_out_of_bounds(std::ostream& out, const Comparison& cmp, const std::string& prefix) {
    for (const auto& d : cmp.differences)
        if (d.out_of_bounds())
            out << fmt::format(
                "    {}{:<52} relative {:.3g} > {:.3g} (spread {:.3g}, {:.3g} times it; max abs "
                "{:.3g})\n",
                prefix, d.quantity, d.relative, d.tolerance, d.noise,
                d.noise > 0 ? d.relative / d.noise : 0.0, d.max_abs);
}

// The bound each kind of quantity was held to ("loss", "gradient", "gradient input",
// "gradient[2]", ..., "state-1", "update", "state"), as the range over its determined
// quantities, in the order they were compared.
std::string bounds_line(const Comparison& cmp) {
    std::vector<std::pair<std::string, std::pair<double, double>>> kinds;
    for (const auto& d : cmp.differences) {
        if (!d.determined) continue;
        const std::string kind = d.quantity == "gradient input" ? d.quantity
                                 : d.quantity.rfind("loss[", 0) == 0
                                     ? "loss"
                                     : d.quantity.substr(0, d.quantity.find(' '));
        auto it = std::find_if(kinds.begin(), kinds.end(),
                               [&](const auto& k) { return k.first == kind; });
        if (it == kinds.end()) {
            kinds.push_back({kind, {d.tolerance, d.tolerance}});
            continue;
        }
        it->second.first = std::min(it->second.first, d.tolerance);
        it->second.second = std::max(it->second.second, d.tolerance);
    }
    std::string line;
    for (const auto& [kind, range] : kinds) {
        line += line.empty() ? "" : ", ";
        line += range.first == range.second
                    ? fmt::format("{} {:.2g}", kind, range.first)
                    : fmt::format("{} {:.2g}..{:.2g}", kind, range.first, range.second);
    }
    return line;
}

const BackendCheck* check_of(const CheckOutcome& outcome, const std::string& backend) {
    for (const auto& c : outcome.checks)
        if (c.run.backend == backend) return &c;
    return nullptr;
}

// A backend's cell in a configuration's row: its verdict and worst relative error over tolerance.
std::string layer_cell(const BackendCheck* c) {
    if (!c) return "-";
    const Difference* worst = compared(*c) ? c->comparison.worst_relative() : nullptr;
    if (!worst || !c->comparison.problem.empty()) return verdict_of(*c);
    return fmt::format("{:<9} {:>7.2g}", verdict_of(*c), worst->ratio());
}

}  // namespace

void CheckTableReporter::report(const CheckRequest& request, const CheckOutcome& outcome) {
    out_ << fmt::format("check {}: baseline {}, {} steps\n", request.config_path, request.baseline,
                        request.steps);
    if (!outcome.baseline_problem.empty()) {
        out_ << "baseline failed: " << outcome.baseline_problem << "\n";
        return;
    }
    size_t name_width = 16;  // the backend column fits the longest name
    for (const auto& c : outcome.checks) name_width = std::max(name_width, c.run.backend.size());
    out_ << fmt::format("{:<{}} {:<7} {:<5} {:<9} {:>10} {:>10} {:>8}  {:<44} {}\n", "backend",
                        name_width, "device", "math", "verdict", "worst rel", "spread", "/ tol",
                        "where", "tolerance");
    for (const auto& c : outcome.checks) {
        if (!compared(c)) {
            out_ << fmt::format("{:<{}} {:<7} {:<5} {:<9} {}\n", c.run.backend, name_width,
                                c.run.device, c.run.math_word(), verdict_of(c), c.run.message);
            continue;
        }
        const auto& cmp = c.comparison;
        if (!cmp.problem.empty()) {
            out_ << fmt::format("{:<{}} {:<7} {:<5} {:<9} {}\n", c.run.backend, name_width,
                                c.run.device, c.run.math_word(), verdict_of(c), cmp.problem);
            continue;
        }
        const Difference* rel = cmp.worst_relative();
        out_ << fmt::format("{:<{}} {:<7} {:<5} {:<9} {:>10.3g} {:>10.3g} {:>8.2g}  {:<44} {}\n",
                            c.run.backend, name_width, c.run.device, c.run.math_word(),
                            verdict_of(c), rel ? rel->relative : 0.0, rel ? rel->noise : 0.0,
                            rel ? rel->ratio() : 0.0, rel ? rel->quantity : "",
                            cmp.tolerance.label);
        out_ << "    bounds (relative): " << bounds_line(cmp) << "\n";
        if (cmp.members > kFirstMembers)
            out_ << (cmp.pass ? fmt::format("    ensemble: {} members (the first {} left a "
                                            "quantity out of bounds)\n",
                                            cmp.members, cmp.members - 1)
                              : fmt::format("    ensemble: out of bounds against all {} members\n",
                                            cmp.members));
        for (const auto& d : cmp.differences)
            if (d.member > 0)
                out_ << fmt::format(
                    "    {}: {:.3g} from the baseline's value, {:.3g} from member {}'s (a decision "
                    "within rounding that member took)\n",
                    d.quantity, d.relative, d.member_relative, d.member);
        if (const int n = cmp.undetermined_quantities(); n > 0)
            out_ << fmt::format(
                "    {} quantit{} undetermined in {} (the ensemble's spread at "
                "least {:.2g} of their size, or a tolerance of {:.2g} of it; in the JSON)\n",
                n, n == 1 ? "y" : "ies", c.run.math_word(), kUndeterminedSpread, kJudgingTolerance);
        if (!cmp.pass) write_out_of_bounds(out_, cmp, "");
        for (const auto& n : cmp.not_compared) out_ << "    not compared: " << n << "\n";
    }
    if (outcome.rank_checks.empty()) return;
    out_ << "\ndata-parallel steps, the same batch on every rank, against the one-process step:\n";
    out_ << fmt::format("{:<16} {:>5}  {:<9} {}\n", "backend", "ranks", "verdict", "detail");
    for (const auto& c : outcome.rank_checks)
        out_ << fmt::format("{:<16} {:>5}  {:<9} {}\n", c.backend, c.ranks, rank_verdict_of(c),
                            c.detail);
}

void CheckTableReporter::report_layers(const CheckRequest& request,
                                       const LayerCheckOutcome& outcome) {
    out_ << fmt::format(
        "check {} layer by layer (--layers '{}'): baseline {}, {} steps, {} configuration{}{}\n",
        request.config_path, outcome.layers, request.baseline, request.steps, outcome.units.size(),
        outcome.units.size() == 1 ? "" : "s", outcome.interrupted ? " (interrupted)" : "");
    const std::vector<std::string> backends = backends_of(outcome);
    size_t name_width = 13;
    for (const auto& u : outcome.units) name_width = std::max(name_width, u.unit.name.size());
    std::vector<size_t> widths;
    for (const auto& b : backends) widths.push_back(std::max<size_t>(b.size(), 17));

    out_ << "(each backend: its verdict and worst relative error over its tolerance)\n";
    out_ << fmt::format("{:<{}} {:>5}", "configuration", name_width, "count");
    for (size_t i = 0; i < backends.size(); ++i)
        out_ << fmt::format("  {:<{}}", backends[i], widths[i]);
    out_ << "\n";
    std::map<std::string, std::string> skipped;  // backend -> the reason, shown once
    std::set<std::string> tolerances;
    for (const auto& u : outcome.units) {
        out_ << fmt::format("{:<{}} {:>5}", u.unit.name, name_width, u.unit.count());
        if (!u.outcome.baseline_problem.empty()) {
            out_ << "  baseline failed: " << u.outcome.baseline_problem << "\n";
            continue;
        }
        for (size_t i = 0; i < backends.size(); ++i)
            out_ << fmt::format("  {:<{}}", layer_cell(check_of(u.outcome, backends[i])),
                                widths[i]);
        out_ << "\n";
        for (const auto& c : u.outcome.checks) {
            if (c.run.status == output::Status::skipped) {
                skipped.emplace(c.run.backend, c.run.message);
            } else if (!compared(c)) {
                out_ << fmt::format("    {}: {}\n", c.run.backend, c.run.message);
            } else if (!c.comparison.problem.empty()) {
                out_ << fmt::format("    {}: {}\n", c.run.backend, c.comparison.problem);
            } else {
                const Tolerance& t = c.comparison.tolerance;
                tolerances.insert(fmt::format("{} (loss {:.3g}, gradients {:.3g}, state {:.3g})",
                                              t.label, t.loss, t.gradient, t.state));
                if (!c.comparison.pass)
                    write_out_of_bounds(out_, c.comparison, c.run.backend + ": ");
            }
        }
    }
    for (const auto& [backend, reason] : skipped)
        out_ << fmt::format("{} skipped: {}\n", backend, reason);
    for (const auto& t : tolerances) out_ << "tolerance: " << t << "\n";

    const std::vector<KindSummary> summaries = summarize_by_kind(outcome);
    if (summaries.empty()) return;
    std::vector<std::string> kinds;
    for (const auto& s : summaries)
        if (std::find(kinds.begin(), kinds.end(), s.kind) == kinds.end()) kinds.push_back(s.kind);
    size_t kind_width = 4;
    for (const auto& k : kinds) kind_width = std::max(kind_width, k.size());
    out_ << "\nworst by layer kind (each backend: the worst relative error over tolerance, and "
            "how many configurations fail)\n";
    out_ << fmt::format("{:<{}}", "kind", kind_width);
    for (size_t i = 0; i < backends.size(); ++i)
        out_ << fmt::format("  {:<{}}", backends[i], widths[i]);
    out_ << "\n";
    for (const auto& kind : kinds) {
        out_ << fmt::format("{:<{}}", kind, kind_width);
        for (size_t i = 0; i < backends.size(); ++i) {
            std::string cell = "-";
            for (const auto& s : summaries) {
                if (s.kind != kind || s.backend != backends[i]) continue;
                const int ran = s.configurations - s.skipped;
                cell = ran == 0 ? "SKIPPED"
                                : fmt::format("{:>7.2g}  {} of {} fail",
                                              s.worst.quantity.empty() ? 0.0 : s.worst.ratio(),
                                              s.failed, ran);
            }
            out_ << fmt::format("  {:<{}}", cell, widths[i]);
        }
        out_ << "\n";
    }
}

}  // namespace harness::check
