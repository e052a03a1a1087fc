#include "output/table_reporter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace harness::output {

namespace {

constexpr size_t kColumns = 10;
constexpr size_t kTextColumns = 3;  // left-aligned; the numbers after them are right-aligned
using Cells = std::array<std::string, kColumns>;

const Cells kHeader{"backend",  "device",   "status",  "median ms",  "IQR ms",
                    "CPU/wall", "images/s", "GFLOP/s", "first loss", "last loss"};

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
    Cells c{name_of(r), r.device,           to_string(r.status),        "-", "-", "-", "-",
            "-",        first_loss_cell(r), loss_cell(r, r.last_loss())};
    if (has_timings(r)) {
        c[3] = fmt::format("{:.3f}", r.stats.median_ms);
        c[4] = fmt::format("{:.3f}", r.stats.iqr_ms);
        // The worker's CPU time over the wall time of the median step: about the threads kept
        // busy, more where they spin.
        if (!r.cpu_ms.empty() && r.stats.median_ms > 0)
            c[5] = fmt::format("{:.2f}", r.cpu_median_ms() / r.stats.median_ms);
        c[6] = fmt::format("{:.1f}", r.stats.images_per_s);
        c[7] = fmt::format("{:.1f}", r.stats.gflops);
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

void append_row(std::string& out, const Cells& cells, const std::array<size_t, kColumns>& width) {
    std::string line;
    for (size_t i = 0; i < kColumns; ++i) {
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

std::string format_table(const std::vector<BackendRun>& runs) {
    std::vector<Cells> rows;
    rows.reserve(runs.size());
    for (const BackendRun& r : runs) rows.push_back(row_of(r));

    std::array<size_t, kColumns> width{};
    for (size_t i = 0; i < kColumns; ++i) width[i] = columns_of(kHeader[i]);
    for (const Cells& c : rows) {
        for (size_t i = 0; i < kColumns; ++i) width[i] = std::max(width[i], columns_of(c[i]));
    }

    std::string out;
    append_row(out, kHeader, width);
    Cells rule;
    for (size_t i = 0; i < kColumns; ++i) rule[i] = std::string(width[i], '-');
    append_row(out, rule, width);
    for (const Cells& c : rows) append_row(out, c, width);

    std::string notes;
    for (const BackendRun& r : runs) {
        for (const std::string& n : footnotes(r)) notes += n + '\n';
    }
    if (!notes.empty()) out += '\n' + notes;
    return out;
}

}  // namespace

void TableReporter::finalize(const std::vector<BackendRun>& runs) {
    out_ << format_table(runs);
    const std::string warnings = environment_warning_lines(provenance_);
    if (!warnings.empty()) out_ << '\n' << warnings;
}

}  // namespace harness::output
