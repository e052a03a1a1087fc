#include "layers/layer_table.hpp"

#include "output/csv_line.hpp"
#include "output/csv_reporter.hpp"
#include "output/stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace harness::layers {

namespace {

double median(std::vector<double> xs) {
    if (xs.empty()) return LayerCell::kUnknown;
    std::sort(xs.begin(), xs.end());
    return output::percentile(xs, 0.5);
}

const UnitSamples* find_unit(const BackendLayers& b, const std::string& name) {
    for (const UnitSamples& u : b.units)
        if (u.name == name) return &u;
    return nullptr;
}

output::Comparison versus(const std::vector<double>& ms, const std::vector<double>& first,
                          const std::string& stream) {
    if (ms.empty() || first.empty()) return {};
    return output::compare({output::Round{ms, first}}, stream);
}

// Three significant digits ("12.3", "0.0412"), whole numbers from 1000 on ("1587"); "-" when
// unknown.
std::string number(double v, const char* format = "{:.3g}") {
    if (std::isnan(v)) return "-";
    if (std::fabs(v) >= 1000) return fmt::format("{:.0f}", v);
    return fmt::format(fmt::runtime(format), v);
}

// "62%"; "-" when unknown (no bound, or no time).
std::string percent(double share) {
    if (!std::isfinite(share) || share <= 0) return "-";
    return fmt::format("{:.0f}%", 100 * share);
}

std::string ratio_text(const output::Comparison& c) {
    if (c.rounds == 0) return "-";
    if (!c.ratio_interval.known()) return fmt::format("{:.2f}", c.ratio);
    return fmt::format("{:.2f} [{:.2f}, {:.2f}]", c.ratio, c.ratio_interval.lo,
                       c.ratio_interval.hi);
}

}  // namespace

LayerTable make_layer_table(const std::string& config, const std::vector<BackendLayers>& backends,
                            int configurations_in_model) {
    LayerTable t;
    t.config = config;
    t.configurations_in_model = configurations_in_model;
    for (const BackendLayers& b : backends) t.backends.push_back(b.whole.backend);
    const BackendLayers* listing = nullptr;
    for (const BackendLayers& b : backends)
        if (!listing && !b.units.empty()) listing = &b;
    if (listing)
        for (const UnitSamples& u : listing->units) {
            LayerRow& row = t.rows.emplace_back();
            row.unit = u.name;
            row.kind = u.kind;
            row.count = u.count;
            row.training_flops = u.training_flops;
            const UnitSamples* first = find_unit(backends.front(), u.name);
            for (const BackendLayers& b : backends) {
                LayerCell& cell = row.cells.emplace_back();
                const UnitSamples* mine = find_unit(b, u.name);
                if (!mine) {
                    cell.error = b.whole.message.empty() ? "not measured" : b.whole.message;
                    continue;
                }
                if (const auto bound = b.bound_ms.find(u.name); bound != b.bound_ms.end())
                    cell.bound_ms = bound->second;
                cell.samples = mine->ms.size();
                cell.timed_by = mine->timed_by;
                cell.error = mine->error;
                cell.median_ms = median(mine->ms);
                cell.forward_ms = median(mine->forward_ms);
                cell.backward_ms = median(mine->backward_ms);
                if (cell.median_ms > 0)  // a layer fused into another's operation takes none
                    cell.gflops = static_cast<double>(u.training_flops) / cell.median_ms / 1e6;
                if (&b != &backends.front() && first)
                    cell.vs_first =
                        versus(mine->ms, first->ms, config + "/" + u.name + "/" + b.whole.backend);
            }
        }
    for (size_t k = 0; k < backends.size(); ++k) {
        PartsSum& s = t.sums.emplace_back();
        s.whole_ms = median(backends[k].whole.samples_ms);
        if (backends[k].whole.bound_ms > 0) s.bound_ms = backends[k].whole.bound_ms;
        if (k > 0)
            s.whole_vs_first = versus(backends[k].whole.samples_ms, backends[0].whole.samples_ms,
                                      config + "/step/" + backends[k].whole.backend);
        if (static_cast<int>(t.rows.size()) != configurations_in_model) continue;
        double parts = 0;
        for (const LayerRow& row : t.rows) parts += row.count * row.cells[k].median_ms;
        s.parts_ms = parts;  // NaN when a configuration has no samples
    }
    return t;
}

std::string format_layer_table(const LayerTable& t) {
    size_t width = std::string("sum of the parts (count x ms)").size();
    for (const LayerRow& r : t.rows) width = std::max(width, r.unit.size());
    std::string out = fmt::format(
        "{}, layer by layer: ms per step of each configuration alone (median; fwd and bwd "
        "where the backend times them), GFLOP/s, its roofline bound over that time "
        "(docs/roofline.md), and the time over {}'s with its 95% interval\n\n",
        t.config, t.backends.empty() ? "" : t.backends.front());
    std::string header = fmt::format("{:<{}} {:>5}", "configuration", width, "count");
    for (size_t k = 0; k < t.backends.size(); ++k) {
        header += fmt::format("  | {:<{}}", t.backends[k], k == 0 ? 37 : 58);
    }
    out += header + "\n";
    std::string sub = fmt::format("{:<{}} {:>5}", "", width, "");
    for (size_t k = 0; k < t.backends.size(); ++k) {
        sub += fmt::format("  | {:>8} {:>7} {:>7} {:>7} {:>6}", "ms", "fwd", "bwd", "GFLOP/s",
                           "bound");
        if (k > 0) sub += fmt::format(" {:<20}", "ratio [95%]");
    }
    out += sub + "\n";
    for (const LayerRow& r : t.rows) {
        std::string line = fmt::format("{:<{}} {:>5}", r.unit, width, r.count);
        for (size_t k = 0; k < r.cells.size(); ++k) {
            const LayerCell& c = r.cells[k];
            if (c.samples == 0) {
                line += fmt::format("  | {:<{}}", "no samples: " + c.error.substr(0, 30),
                                    k == 0 ? 37 : 58);
                continue;
            }
            line += fmt::format("  | {:>8} {:>7} {:>7} {:>7} {:>6}", number(c.median_ms),
                                number(c.forward_ms), number(c.backward_ms),
                                number(c.gflops, "{:.0f}"), percent(c.bound_ms / c.median_ms));
            if (k > 0) line += fmt::format(" {:<20}", ratio_text(c.vs_first));
        }
        out += line + "\n";
    }
    auto summary = [&](const std::string& label, auto cell) {
        std::string line = fmt::format("{:<{}} {:>5}", label, width, "");
        for (size_t k = 0; k < t.sums.size(); ++k)
            line += fmt::format("  | {:<{}}", cell(k), k == 0 ? 37 : 58);
        out += line + "\n";
    };
    out += "\n";
    summary("whole step (measured)", [&](size_t k) {
        const PartsSum& s = t.sums[k];
        const double bound = t.sums[k].bound_ms;
        return fmt::format("{:>8}", number(s.whole_ms)) +
               (bound > 0 ? " (" + percent(bound / s.whole_ms) + " of bound)" : "") +
               (k > 0 ? "  ratio " + ratio_text(s.whole_vs_first) : "");
    });
    summary("sum of the parts (count x ms)",
            [&](size_t k) { return fmt::format("{:>8}", number(t.sums[k].parts_ms)); });
    summary("outside the layers", [&](size_t k) {
        const PartsSum& s = t.sums[k];
        if (std::isnan(s.parts_ms)) return fmt::format("{:>8}", "-");
        return fmt::format("{:>8} ({:.0f}% of the step)", number(s.outside_ms()),
                           100 * s.outside_ms() / s.whole_ms);
    });
    if (static_cast<int>(t.rows.size()) != t.configurations_in_model)
        out += fmt::format(
            "\n(the sum of the parts needs every configuration: {} of the model's {} were "
            "timed)\n",
            t.rows.size(), t.configurations_in_model);
    return out;
}

std::vector<std::string> layer_csv_columns() {
    std::vector<std::string> columns = output::identity_columns();
    columns.insert(columns.end(), {"status",        "message",        "row",
                                   "configuration", "kind",           "count",
                                   "timed_by",      "samples",        "median_ms",
                                   "forward_ms",    "backward_ms",    "gflops",
                                   "share_of_step", "ratio",          "ratio_lo",
                                   "ratio_hi",      "training_flops", "environment_warnings",
                                   "bound_ms",      "bound_share"});
    return columns;
}

std::string layer_csv(const output::Provenance& p, const std::vector<BackendLayers>& backends,
                      const LayerTable& t) {
    auto fixed = [](double v) { return std::isnan(v) ? std::string() : fmt::format("{:.4f}", v); };
    auto ratio = [&](const output::Comparison& c) -> std::vector<std::string> {
        if (c.rounds == 0) return {"", "", ""};
        return {fixed(c.ratio), fixed(c.ratio_interval.lo), fixed(c.ratio_interval.hi)};
    };
    std::string text;
    output::append_csv_line(text, layer_csv_columns());
    for (size_t k = 0; k < backends.size(); ++k) {
        const output::BackendRun& r = backends[k].whole;
        const PartsSum& s = t.sums[k];
        auto line = [&](const std::string& row, const std::string& configuration,
                        const std::string& kind, const std::string& count,
                        const std::string& timed_by, size_t samples, double median_ms,
                        double forward_ms, double backward_ms, double gflops, double share,
                        const output::Comparison& c, int64_t flops, double bound_ms) {
            std::vector<std::string> f = output::identity_fields(p, r);
            f.insert(f.end(), {to_string(r.status), r.message, row, configuration, kind, count,
                               timed_by, std::to_string(samples), fixed(median_ms),
                               fixed(forward_ms), fixed(backward_ms), fixed(gflops), fixed(share)});
            for (auto& x : ratio(c)) f.push_back(x);
            f.push_back(flops > 0 ? std::to_string(flops) : "");
            f.push_back(output::environment_warnings(p));
            const bool bounded = bound_ms > 0 && median_ms > 0;
            f.push_back(bounded ? fixed(bound_ms) : "");
            f.push_back(bounded ? fixed(bound_ms / median_ms) : "");
            output::append_csv_line(text, f);
        };
        for (const LayerRow& row : t.rows) {
            const LayerCell& c = row.cells[k];
            line("layer", row.unit, row.kind, std::to_string(row.count), c.timed_by, c.samples,
                 c.median_ms, c.forward_ms, c.backward_ms, c.gflops,
                 row.count * c.median_ms / s.whole_ms, c.vs_first, row.training_flops, c.bound_ms);
        }
        const double nan = LayerCell::kUnknown;
        line("step", "", "", "", "step", r.samples_ms.size(), s.whole_ms, nan, nan,
             static_cast<double>(r.flops_per_step) / s.whole_ms / 1e6, 1.0, s.whole_vs_first,
             r.flops_per_step, s.bound_ms);
        line("parts", "", "", "", "", 0, s.parts_ms, nan, nan, nan, s.parts_ms / s.whole_ms, {}, 0,
             nan);
        line("outside", "", "", "", "", 0, s.outside_ms(), nan, nan, nan,
             s.outside_ms() / s.whole_ms, {}, 0, nan);
    }
    return text;
}

}  // namespace harness::layers
