#include "check/layer_check.hpp"

#include "check/check_reporter.hpp"
#include "config/printable.hpp"
#include "model/hourglass.hpp"
#include "model/name_pattern.hpp"
#include "plugin_host/child_process.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <stdexcept>

namespace harness::check {

std::vector<int> select_units(const std::vector<model::LayerUnit>& units,
                              const std::string& regex) {
    std::unique_ptr<model::NamePattern> pattern;
    try {
        pattern = std::make_unique<model::NamePattern>(regex);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(fmt::format(
            "--layers: '{}' is not a valid regular expression ({})", printable(regex), e.what()));
    }
    std::vector<int> selected;
    for (size_t i = 0; i < units.size(); ++i)
        if (pattern->found_in(units[i].name)) selected.push_back(static_cast<int>(i));
    if (selected.empty()) {
        std::string names;
        for (size_t i = 0; i < units.size() && i < 4; ++i) names += (i ? ", " : "") + units[i].name;
        throw std::invalid_argument(
            fmt::format("--layers: '{}' matches none of the model's {} layer configurations ({}{})",
                        printable(regex), units.size(), names, units.size() > 4 ? ", ..." : ""));
    }
    return selected;
}

LayerCheckOutcome run_layer_check(const config::RunConfig& config, CheckRequest request,
                                  const std::vector<int>& units, const std::string& layers) {
    plugin_host::install_interrupt_handler();
    const std::vector<model::LayerUnit> all =
        model::layer_units(model::build_hourglass(config.model));
    LayerCheckOutcome outcome;
    outcome.layers = layers;
    for (size_t k = 0; k < units.size(); ++k) {
        if (plugin_host::interrupted()) break;
        request.unit = units[k];
        UnitCheck& u = outcome.units.emplace_back();
        u.unit = all.at(static_cast<size_t>(units[k]));
        std::fprintf(stderr, "[%zu/%zu] %s\n", k + 1, units.size(), u.unit.name.c_str());
        u.outcome = run_check(config, request);
    }
    outcome.interrupted = plugin_host::interrupted();
    return outcome;
}

std::vector<std::string> backends_of(const LayerCheckOutcome& outcome) {
    std::vector<std::string> names;
    for (const auto& u : outcome.units)
        for (const auto& c : u.outcome.checks)
            if (std::find(names.begin(), names.end(), c.run.backend) == names.end())
                names.push_back(c.run.backend);
    return names;
}

std::vector<KindSummary> summarize_by_kind(const LayerCheckOutcome& outcome) {
    std::vector<KindSummary> summaries;
    const std::vector<std::string> backends = backends_of(outcome);
    for (const auto& u : outcome.units)
        for (const auto& c : u.outcome.checks) {
            const auto of_this = [&](const KindSummary& s) {
                return s.kind == u.unit.kind && s.backend == c.run.backend;
            };
            if (std::none_of(summaries.begin(), summaries.end(), of_this))
                // Kinds in order of first appearance, and the backends in one order under each.
                for (const auto& b : backends) {
                    KindSummary& s = summaries.emplace_back();
                    s.kind = u.unit.kind;
                    s.backend = b;
                }
            const auto it = std::find_if(summaries.begin(), summaries.end(), of_this);
            KindSummary& s = *it;
            ++s.configurations;
            if (c.run.status == output::Status::skipped) {
                ++s.skipped;
                continue;
            }
            const bool readable = compared(c) && c.comparison.problem.empty();
            if (!readable || !c.comparison.pass) ++s.failed;
            if (!readable) continue;
            const Difference* worst = c.comparison.worst_relative();
            if (worst && (s.worst.quantity.empty() || worst->ratio() > s.worst.ratio())) {
                s.worst = *worst;
                s.worst_configuration = u.unit.name;
            }
        }
    // A kind's row for a backend that never ran one of its configurations says nothing.
    summaries.erase(std::remove_if(summaries.begin(), summaries.end(),
                                   [](const KindSummary& s) { return s.configurations == 0; }),
                    summaries.end());
    return summaries;
}

}  // namespace harness::check
