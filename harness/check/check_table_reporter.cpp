#include "check/check_table_reporter.hpp"

#include <fmt/format.h>

namespace harness::check {

void CheckTableReporter::report(const CheckRequest& request, const CheckOutcome& outcome) {
    out_ << fmt::format("check {}: baseline {}, {} steps\n", request.config_path, request.baseline,
                        request.steps);
    if (!outcome.baseline_problem.empty()) {
        out_ << "baseline failed: " << outcome.baseline_problem << "\n";
        return;
    }
    out_ << fmt::format("{:<16} {:<7} {:<5} {:<9} {:>10}  {:<44} {:>10}  {}\n", "backend", "device",
                        "math", "verdict", "worst rel", "where", "worst abs", "tolerance");
    for (const auto& c : outcome.checks) {
        if (!compared(c)) {
            out_ << fmt::format("{:<16} {:<7} {:<5} {:<9} {}\n", c.run.backend, c.run.device,
                                c.run.math_mode, verdict_of(c), c.run.message);
            continue;
        }
        const auto& cmp = c.comparison;
        if (!cmp.problem.empty()) {
            out_ << fmt::format("{:<16} {:<7} {:<5} {:<9} {}\n", c.run.backend, c.run.device,
                                c.run.math_mode, verdict_of(c), cmp.problem);
            continue;
        }
        const Difference* rel = cmp.worst_relative();
        const Difference* abs = cmp.worst_abs();
        out_ << fmt::format("{:<16} {:<7} {:<5} {:<9} {:>10.3g}  {:<44} {:>10.3g}  {}\n",
                            c.run.backend, c.run.device, c.run.math_mode, verdict_of(c),
                            rel ? rel->relative : 0.0, rel ? rel->quantity : "",
                            abs ? abs->max_abs : 0.0, cmp.tolerance.label);
        if (!cmp.pass)
            for (const auto& d : cmp.differences)
                if (!d.within())
                    out_ << fmt::format("    {:<52} relative {:.3g} > {:.3g} (max abs {:.3g})\n",
                                        d.quantity, d.relative, d.tolerance, d.max_abs);
    }
}

}  // namespace harness::check
