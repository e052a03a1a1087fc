#include "output/table_reporter.hpp"

#include "output/round_comparison.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace harness::output {

namespace {

constexpr size_t kColumns = 14;
constexpr size_t kTextColumns = 3;  // left-aligned; the numbers after them are right-aligned
// With a baseline, the rounds and the ratio to it; with a target, whether each reached it.
constexpr size_t kComparisonColumns = 2, kTargetColumns = 1;
using Cells = std::array<std::string, kColumns>;

Cells header(const RoundPlan& plan) {
    return {"backend",
            "device",
            "status",
            "median ms",
            "IQR ms",
            "CPU/wall",
            "images/s",
            "GFLOP/s",
            "of bound",
            "first loss",
            "last loss",
            "rounds",
            "vs " + plan.baseline,
            fmt::format("within ±{:g}%", 100 * plan.target)};
}

std::string name_of(const BackendRun& r) {
    return r.name();
}

// An interrupted run's figures are those of the timed steps it completed (partial).
bool has_timings(const BackendRun& r) {
    return r.status == Status::ok || r.status == Status::mismatch ||
           (r.status == Status::interrupted && !r.samples_ms.empty());
}

bool stepped(const BackendRun& r) {
    return !r.warmup_losses.empty() || !r.losses.empty();
}

std::string loss_cell(const BackendRun& r, double v) {
    return stepped(r) ? fmt::format("{:.6g}", v) : "-";
}

// A first loss that disagrees with the other backends' is marked, and a note under the table says
// against what.
std::string first_loss_cell(const BackendRun& r) {
    return loss_cell(r, r.first_loss()) + (r.loss_agreement == "disagrees" ? "!" : "");
}

Cells row_of(const BackendRun& r) {
    Cells c{name_of(r), r.device,           to_string(r.status),         "-", "-", "-", "-", "-",
            "-",        first_loss_cell(r), loss_cell(r, r.last_loss()), "",  "",  ""};
    if (has_timings(r)) {
        c[3] = fmt::format("{:.3f}", r.stats.median_ms);
        c[4] = fmt::format("{:.3f}", r.stats.iqr_ms);
        // The worker's CPU time over the wall time of the median step: about the threads kept
        // busy, more where they spin.
        if (!r.cpu_ms.empty() && r.stats.median_ms > 0)
            c[5] = fmt::format("{:.2f}", r.cpu_median_ms() / r.stats.median_ms);
        c[6] = fmt::format("{:.1f}", r.stats.images_per_s);
        c[7] = fmt::format("{:.1f}", r.stats.gflops);
        // The roofline bound over the median step: how near the machine's limit it runs.
        if (r.bound_ms > 0 && r.stats.median_ms > 0)
            c[8] = fmt::format("{:.0f}%", 100 * r.bound_ms / r.stats.median_ms);
    }
    return c;
}

// Display width of UTF-8 text: continuation bytes take no column.
size_t columns_of(const std::string& s) {
    size_t n = 0;
    for (char ch : s) n += (static_cast<unsigned char>(ch) & 0xC0) != 0x80 ? 1 : 0;
    return n;
}

std::string padded(const std::string& s, size_t width, bool left) {
    const std::string pad(width - std::min(width, columns_of(s)), ' ');
    return left ? s + pad : pad + s;
}

void append_row(std::string& out, const Cells& cells, const std::array<size_t, kColumns>& width,
                size_t columns) {
    std::string line;
    for (size_t i = 0; i < columns; ++i) {
        if (i > 0) line += "  ";
        line += padded(cells[i], width[i], i < kTextColumns);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + '\n';
}

std::vector<std::string> footnotes(const BackendRun& r) {
    std::vector<std::string> notes;
    const std::string name = name_of(r);
    if (r.status != Status::ok) {
        std::string note = fmt::format("{}: {}", name, to_string(r.status));
        if (!r.message.empty()) note += " \u2014 " + r.message;
        if (r.status == Status::mismatch) note += " (its timings are not a valid comparison)";
        notes.push_back(note);
    }
    if (r.check == "stale")
        notes.push_back(name +
                        ": check stale \u2014 the last harness check of this config was of another "
                        "build of its plugin or other library versions; run harness check again");
    if (r.loss_agreement == "disagrees")
        notes.push_back(name + ": first-step loss disagrees \u2014 " + r.loss_agreement_detail);
    if (r.parallel && has_timings(r) && !r.parallel->communication_ms.empty()) {
        const ParallelRun& p = *r.parallel;
        const double share = compute_stats(p.communication_ms, 0, 0).median_ms / r.stats.median_ms;
        std::string note = fmt::format(
            "{}: {}, {:.1f} MB of gradients in {} bucket{}{}, communication {:.0f}% of the step",
            name, p.communicator, static_cast<double>(p.gradient_bytes) / 1e6, p.buckets,
            p.buckets == 1 ? "" : "s", p.overlap ? " overlapped with the backward pass" : "",
            100 * share);
        if (p.allreduce_ms > 0)
            note += fmt::format(
                "; their all-reduce alone {:.3f} ms, algbw {:.2f} GB/s, busbw "
                "{:.2f} GB/s",
                p.allreduce_ms, p.algbw_gbps, p.busbw_gbps);
        if (p.oversubscribed)
            note += "; oversubscribed (more ranks than processors): no scaling figure";
        else if (std::isfinite(p.scaling_efficiency))
            note += fmt::format("; weak-scaling efficiency {:.2f}", p.scaling_efficiency);
        notes.push_back(note);
    }
    if (has_timings(r) && r.stats.noisy && r.stats.median_ms > 0) {
        notes.push_back(fmt::format("{}: noisy, IQR/median {:.0f}%", name,
                                    100.0 * r.stats.iqr_ms / r.stats.median_ms));
    }
    if (r.nonfinite_loss || !std::isfinite(r.first_loss()) || !std::isfinite(r.last_loss())) {
        if (stepped(r)) notes.push_back(fmt::format("{}: non-finite loss (NaN/inf)", name));
    }
    return notes;
}

// A backend's rounds as one run: every timed step of every round, the statistics over them all,
// the first round's identity and status.
BackendRun merged(const std::vector<const BackendRun*>& rounds) {
    BackendRun m = *rounds.front();
    for (size_t i = 1; i < rounds.size(); ++i) {
        const BackendRun& r = *rounds[i];
        if (!has_timings(r)) continue;
        m.samples_ms.insert(m.samples_ms.end(), r.samples_ms.begin(), r.samples_ms.end());
        m.cpu_ms.insert(m.cpu_ms.end(), r.cpu_ms.begin(), r.cpu_ms.end());
        m.losses = r.losses;
    }
    if (has_timings(m)) m.stats = compute_stats(m.samples_ms, m.batch, m.flops_per_step);
    return m;
}

// "1.208x [1.190, 1.231]", with "no significant difference" where the interval holds 1.
std::string ratio_cell(const Comparison& c) {
    if (c.rounds == 0) return "-";
    std::string s = ratio_and_interval(c.ratio, c.ratio_interval);
    if (c.ratio_interval.known() && !c.significant()) s += " no significant difference";
    return s;
}

// Whether the first timed step was the slowest of its round in every round, which steps in a
// random order of n a round do with probability the product of 1/n, below 1 in 100: the warm-up
// did not reach the steady state.
bool warmup_too_short(const BackendRounds& rounds) {
    double chance = 1;
    for (const BackendRun* r : rounds) {
        if (r->status != Status::ok || r->samples_ms.size() < 2) continue;
        const auto slowest = std::max_element(r->samples_ms.begin(), r->samples_ms.end());
        if (slowest != r->samples_ms.begin() ||
            std::count(r->samples_ms.begin(), r->samples_ms.end(), *slowest) > 1)
            return false;
        chance /= static_cast<double>(r->samples_ms.size());
    }
    return chance < 0.01;
}

// Whether a backend reached the plan's target and, if not, what ended the rounds first.
std::string target_cell(const RoundPlan& plan, const Comparison& c) {
    if (c.rounds == 0) return "-";
    if (relative_half_width(c) <= plan.target) return "yes";
    if (plan.stopped_by == "budget") return "no: budget spent";
    if (plan.stopped_by == "max_rounds") return "no: most rounds run";
    return "no";
}

std::string format_table(const std::vector<BackendRun>& runs, const RoundPlan& plan,
                         const std::string& config_sha256, const std::vector<std::string>& order) {
    std::vector<BackendRounds> groups = rounds_by_backend(runs);
    auto place = [&](const BackendRounds& g) {
        return std::find(order.begin(), order.end(), g.front()->backend) - order.begin();
    };
    std::stable_sort(groups.begin(), groups.end(),
                     [&](const auto& a, const auto& b) { return place(a) < place(b); });
    const auto baseline_group = std::find_if(groups.begin(), groups.end(), [&](const auto& g) {
        return g.front()->name() == plan.baseline;
    });
    const bool compared = baseline_group != groups.end() && groups.size() > 1;
    const bool targeted = compared && plan.target > 0;

    const std::vector<Comparison> comparisons =
        compared ? compare_rounds(groups, static_cast<size_t>(baseline_group - groups.begin()),
                                  config_sha256)
                 : std::vector<Comparison>();
    std::vector<Cells> rows;
    std::vector<BackendRun> backends;
    for (const auto& g : groups) {
        backends.push_back(merged(g));
        Cells c = row_of(backends.back());
        if (compared) {
            c[11] = std::to_string(g.size());
            if (&g == &*baseline_group) {
                c[12] = "baseline";
            } else if (has_timings(backends.back())) {
                const Comparison& comparison = comparisons[static_cast<size_t>(&g - &groups[0])];
                c[12] = ratio_cell(comparison);
                c[13] = target_cell(plan, comparison);
            }
        }
        rows.push_back(c);
    }

    const size_t columns =
        kColumns - (targeted ? 0 : kTargetColumns) - (compared ? 0 : kComparisonColumns);
    const Cells head = header(plan);
    std::array<size_t, kColumns> width{};
    for (size_t i = 0; i < kColumns; ++i) width[i] = columns_of(head[i]);
    for (const Cells& c : rows) {
        for (size_t i = 0; i < kColumns; ++i) width[i] = std::max(width[i], columns_of(c[i]));
    }

    std::string out;
    append_row(out, head, width, columns);
    Cells rule;
    for (size_t i = 0; i < kColumns; ++i) rule[i] = std::string(width[i], '-');
    append_row(out, rule, width, columns);
    for (const Cells& c : rows) append_row(out, c, width, columns);

    std::string notes;
    if (compared)
        notes += fmt::format(
            "vs {}: median step over the baseline's, the geometric mean over the rounds in which "
            "both ran, [95% interval] over those rounds (docs/statistics.md)\n",
            plan.baseline);
    if (std::any_of(backends.begin(), backends.end(),
                    [](const BackendRun& b) { return b.bound_ms > 0; }))
        notes +=
            "of bound: the step's roofline bound on this machine at the row's threads over its "
            "median step, 100% the machine's limit (docs/roofline.md)\n";
    for (size_t i = 0; i < groups.size(); ++i) {
        for (const std::string& n : footnotes(backends[i])) notes += n + '\n';
        if (warmup_too_short(groups[i]))
            notes += fmt::format(
                "{}: its first timed step was the slowest of its round in every round: more "
                "warm-up steps may be needed (run.warmup)\n",
                backends[i].name());
        for (size_t k = 1; k < groups[i].size(); ++k) {
            const BackendRun& r = *groups[i][k];
            if (r.status == Status::ok) continue;
            notes += fmt::format("{}: round {} {}{}{}\n", r.name(), r.round, to_string(r.status),
                                 r.message.empty() ? "" : " \u2014 ", r.message);
        }
    }
    if (!notes.empty()) out += '\n' + notes;
    return out;
}

}  // namespace

void TableReporter::finalize(const std::vector<BackendRun>& runs) {
    out_ << format_table(runs, provenance_.rounds, provenance_.config_sha256, order_);
    const std::string warnings = environment_warning_lines(provenance_);
    if (!warnings.empty()) out_ << '\n' << warnings;
}

}  // namespace harness::output
