#include "output/csv_reporter.hpp"

#include "output/csv_line.hpp"

#include <fmt/format.h>

#include <algorithm>

#include <cmath>

namespace harness::output {

namespace {

using Row = std::vector<std::string>;

// An interrupted run's figures are those of the timed steps it completed (partial).
bool has_timings(const BackendRun& r) {
    return r.status == Status::ok || r.status == Status::mismatch ||
           (r.status == Status::interrupted && !r.samples_ms.empty());
}

std::string nonzero(int64_t v) {
    return v == 0 ? std::string() : std::to_string(v);
}
std::string boolean(bool b) {
    return b ? "true" : "false";
}
std::string fixed3(double v) {
    return fmt::format("{:.3f}", v);
}

std::string loss(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return fmt::format("{:.9g}", v);
}

double median_of(const std::vector<double>& xs) {
    return compute_stats(xs, 0, 0).median_ms;
}

std::string phase_median(const BackendRun& r, const std::vector<double>& phase) {
    return has_timings(r) && !phase.empty() ? format_ms(median_of(phase)) : std::string();
}

// setup_ms .. optimizer_ms: empty unless the run produced valid timings.
constexpr size_t kTimingColumns = 16;

Row timing_fields(const BackendRun& r) {
    if (!has_timings(r)) return Row(kTimingColumns);
    const Stats& s = r.stats;
    return {format_ms(r.setup_ms),
            format_ms(s.median_ms),
            format_ms(s.mean_ms),
            format_ms(s.stddev_ms),
            format_ms(s.min_ms),
            format_ms(s.max_ms),
            format_ms(s.p10_ms),
            format_ms(s.p90_ms),
            format_ms(s.iqr_ms),
            fmt::format("{:.6f}", s.cv),
            boolean(s.noisy),
            fixed3(s.images_per_s),
            fixed3(s.gflops),
            phase_median(r, r.forward_ms),
            phase_median(r, r.backward_ms),
            phase_median(r, r.optimizer_ms)};
}

// ranks .. scaling_efficiency: empty for a run that is not data-parallel (docs/parallel.md).
constexpr size_t kParallelColumns = 8;

Row parallel_fields(const BackendRun& r) {
    if (!r.parallel) return Row(kParallelColumns);
    const ParallelRun& p = *r.parallel;
    const bool timed = has_timings(r) && !p.communication_ms.empty();
    const bool measured = timed && p.allreduce_ms > 0;
    // Oversubscribed ranks share processors, so their scaling says nothing and is not given.
    const bool scales = timed && !p.oversubscribed && std::isfinite(p.scaling_efficiency);
    return {std::to_string(p.ranks),
            p.communicator,
            boolean(p.oversubscribed),
            timed ? fmt::format("{:.4f}", median_of(p.communication_ms) / r.stats.median_ms)
                  : std::string(),
            nonzero(p.gradient_bytes),
            measured ? fixed3(p.algbw_gbps) : std::string(),
            measured ? fixed3(p.busbw_gbps) : std::string(),
            scales ? fmt::format("{:.4f}", p.scaling_efficiency) : std::string()};
}

}  // namespace

std::vector<std::string> csv_row(const Provenance& p, const BackendRun& r) {
    const bool stepped = !r.warmup_losses.empty() || !r.losses.empty();
    Row row = identity_fields(p, r);
    row.insert(row.end(),
               {r.placement.empty() ? p.placement : r.placement, std::to_string(p.seed),
                std::to_string(r.batch), to_string(r.status), r.message, r.check,
                boolean(r.nonfinite_loss), std::to_string(r.warmup), std::to_string(r.iterations)});
    const Row timings = timing_fields(r);
    row.insert(row.end(), timings.begin(), timings.end());
    row.push_back(
        r.peak_memory_bytes == 0
            ? std::string()
            : fmt::format("{:.1f}", static_cast<double>(r.peak_memory_bytes) / 1048576.0));
    row.push_back(nonzero(r.flops_per_step));
    row.push_back(stepped ? loss(r.first_loss()) : std::string());
    row.push_back(stepped ? loss(r.last_loss()) : std::string());
    row.push_back(environment_warnings(p));
    row.push_back(r.loss_agreement);
    const Row parallel = parallel_fields(r);
    row.insert(row.end(), parallel.begin(), parallel.end());
    row.push_back(has_timings(r) && !r.cpu_ms.empty() ? format_ms(r.cpu_median_ms())
                                                      : std::string());
    row.push_back(join_pairs(r.environment));
    row.push_back(std::to_string(r.round));
    row.push_back(p.order_seed ? std::to_string(*p.order_seed) : std::string());
    row.push_back(join_pairs(r.options_in_force));
    const bool bounded = r.bound_ms > 0 && has_timings(r);
    row.push_back(bounded ? format_ms(r.bound_ms) : std::string());
    row.push_back(bounded ? fmt::format("{:.4f}", r.bound_ms / r.stats.median_ms) : std::string());
    return row;
}

std::string format_ms(double ms) {
    return fmt::format("{:.4f}", ms);
}

std::vector<std::string> identity_columns() {
    // clang-format off
    return {"schema_version", "utc_time",    "harness_version", "git_commit",     "config_name",
            "config_sha256",  "host",        "cpu_model",       "gpu_name",       "gpu_driver",
            "backend",        "plugin",      "plugin_version",  "device",         "options",
            "libraries",      "threads",     "math_mode"};
    // clang-format on
}

std::vector<std::string> identity_fields(const Provenance& p, const BackendRun& r) {
    return {std::to_string(kSchemaVersion),
            p.utc_time,
            p.harness_version,
            p.git_commit,
            p.config_name,
            p.config_sha256,
            p.host,
            p.cpu_model,
            p.gpu_name,
            p.gpu_driver,
            r.backend,
            r.plugin,
            r.plugin_version,
            r.device,
            join_pairs(r.options),
            join_pairs(r.libraries),
            nonzero(r.threads),
            r.math_word()};
}

std::vector<std::string> csv_columns() {
    std::vector<std::string> columns = identity_columns();
    // clang-format off
    columns.insert(columns.end(), {
            "placement",      "seed",
            "batch",          "status",      "message",         "check",          "nonfinite_loss",
            "warmup",         "iterations",  "setup_ms",        "median_ms",      "mean_ms",
            "stddev_ms",      "min_ms",      "max_ms",          "p10_ms",         "p90_ms",
            "iqr_ms",         "cv",          "noisy",           "images_per_s",   "gflops",
            "forward_ms",     "backward_ms", "optimizer_ms",    "peak_memory_mb", "flops_per_step",
            "first_loss",     "last_loss",   "environment_warnings", "loss_agreement",
            "ranks",          "communicator", "oversubscribed", "communication_share",
            "allreduce_bytes", "allreduce_algbw_gbps", "allreduce_busbw_gbps",
            "scaling_efficiency", "cpu_ms",     "environment",    "round",          "order_seed",
            "options_in_force", "bound_ms",   "bound_share"});
    // clang-format on
    return columns;
}

std::string run_header_problem(const std::vector<std::string>& header) {
    auto has = [&](const std::string& column) {
        return std::find(header.begin(), header.end(), column) != header.end();
    };
    if (has("configuration") && has("timed_by"))
        return "a CSV of harness layers, not of harness run (harness layers prints its own table)";
    std::string missing;
    int count = 0;
    for (const std::string& column : csv_columns()) {
        if (!has(column)) missing += (count++ ? ", " : "") + column;
        if (column == "last_loss") break;
    }
    if (count == 0) return "";
    return fmt::format(
        "not a results CSV of harness run: {} of its columns missing ({}; "
        "docs/results-schema.md)",
        count, missing);
}

std::string CsvReporter::contents(const Provenance& provenance,
                                  const std::vector<BackendRun>& runs) const {
    std::string text;
    append_csv_line(text, csv_columns());
    for (const BackendRun& run : runs) append_csv_line(text, csv_row(provenance, run));
    return text;
}

}  // namespace harness::output
